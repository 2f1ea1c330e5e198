"""Scenario schema: how many guests of the profile run, their limits, and optional phases.

A scenario with ``phases`` is a comparison: each phase is the same run with a
few more overrides (another profile, more guests), and the runner reports
every phase normalised to the baseline phase.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from omegaconf import MISSING

from suites.errors import require

KINDS = ("plain", "mixed", "consolidation")
DEFAULT_REPEATS = 3  # a comparison's repeats per phase unless scenario.repeats says otherwise
# The mixed scenario's phases per profile: CAD guests alone, CAD + ML at once, ML alone.
CAD_ALONE, MIXED, ML_ALONE = "cad", "mixed", "ml"


@dataclass
class GuestGroup:
    """Guests of one workload in a mixed run: ``workload`` names configs/workload/<name>.yaml."""

    workload: str = MISSING
    guests: int = 1
    overrides: list[str] = field(default_factory=list)  # e.g. ["workload.size=small"]


@dataclass
class PhaseConfig:
    label: str = MISSING
    overrides: list[str] = field(default_factory=list)  # Hydra overrides on top of the command line's
    mix: list[GuestGroup] = field(default_factory=list)  # replaces scenario.mix in this phase when given
    reference: Optional[str] = None  # the reference study's figure for this phase, shown beside this host's


@dataclass
class MixedConfig:
    """The mixed CAD + ML scenarios (``kind: mixed`` and ``kind: consolidation``), set under ``scenario.study`` (the
    key keeps its name: command lines and recorded params use it)."""

    profiles: list[str] = field(default_factory=list)  # empty: the profile selected on the command line
    cad: GuestGroup = field(default_factory=lambda: GuestGroup(workload="graphics-replay"))
    ml: GuestGroup = field(default_factory=lambda: GuestGroup(workload="mnist-torch"))
    with_ml: bool = True  # consolidation: one ML guest runs beside the CAD guests
    # consolidation: one CAD guest alone first too, so each step's CAD slowdown has its baseline (make size)
    cad_alone: bool = False
    max_guests: int = 4  # consolidation: stop adding CAD guests here (or at the profile's capacity)
    # consolidation: the CAD guest counts measured, in order ([]: every count 1..max_guests); a count skipped is
    # never shown as measured (make size interpolates one, labelled predicted)
    steps: list[int] = field(default_factory=list)
    qos_p95_frame_ms: float = 100.0  # consolidation QoS: every CAD guest's p95 frame time at most this
    qos_ml_slowdown_pct: float = 15.0  # and the ML guest at most this much slower than alone
    qos_cad_slowdown_pct: float = 5.0  # mixed verdict: CAD run time at most this much longer beside ML
    # consolidation: steps run past the first that misses QoS, so the curve shows where QoS breaks and by how much
    steps_past_miss: int = 2
    # The reference study's finding per profile, shown beside this host's figures (configs/scenario/mixed.yaml).
    reference: dict[str, str] = field(default_factory=dict)

    def check(self) -> None:
        require(self.max_guests >= 1, "scenario.study.max_guests", f"must be >= 1, got {self.max_guests}")
        require(all(1 <= n <= 64 for n in self.steps) and self.steps == sorted(set(self.steps)),
                "scenario.study.steps", f"must be increasing counts 1..64, got {list(self.steps)}")
        require(self.qos_p95_frame_ms > 0, "scenario.study.qos_p95_frame_ms", "must be > 0")
        require(self.qos_ml_slowdown_pct >= 0, "scenario.study.qos_ml_slowdown_pct", "must be >= 0")
        require(self.qos_cad_slowdown_pct >= 0, "scenario.study.qos_cad_slowdown_pct", "must be >= 0")
        require(0 <= self.steps_past_miss <= 64, "scenario.study.steps_past_miss",
                f"must be 0..64, got {self.steps_past_miss}")


def counts_of(study: MixedConfig) -> list[int]:
    """The CAD guest counts a consolidation measures: its steps, else every count 1..max_guests."""
    return list(study.steps) or list(range(1, study.max_guests + 1))


@dataclass
class ScenarioConfig:
    name: str = MISSING
    guests: int = 1  # guests of the selected profile, all running the selected workload
    start_timeout_s: float = 300.0  # all guests must reach the start barrier within this
    timeout_s: float = 3600.0  # wall-clock limit for the run after the barrier
    cpu_overcommit: bool = False  # allow more vCPUs than host cores (affinities then overlap)
    phases: list[PhaseConfig] = field(default_factory=list)  # empty: a single run
    baseline: Optional[str] = None  # label of the phase the others are normalised to (default: the first)
    mix: list[GuestGroup] = field(default_factory=list)  # non-empty: these groups instead of guests x workload
    kind: str = "plain"  # plain | mixed (3 phases per profile) | consolidation (add CAD guests until QoS fails)
    study: MixedConfig = field(default_factory=MixedConfig)
    # A comparison runs every phase this often, interleaved (A B C A B C), for spread and verdicts; unset: 3
    # (a consolidation's steps: in a row, A A A B B B, each judged on all of its repeats). The smoke experiment
    # sets 1 (n=1, no spread).
    repeats: Optional[int] = None

    @property
    def compares(self) -> bool:
        """Several phases (declared, or generated by a mixed scenario) rather than one run."""
        return bool(self.phases) or self.kind != "plain"

    @property
    def phase_repeats(self) -> int:
        """A consolidation's steps run their repeats in a row (each step judged on all of them), the other
        comparisons' phases interleaved."""
        return self.repeats if self.repeats is not None else (DEFAULT_REPEATS if self.compares else 1)

    def check(self) -> None:
        require(1 <= self.guests <= 256, "scenario.guests", f"must be 1..256, got {self.guests}")
        require(self.start_timeout_s > 0, "scenario.start_timeout_s", f"must be > 0, got {self.start_timeout_s}")
        require(self.timeout_s > 0, "scenario.timeout_s", f"must be > 0, got {self.timeout_s}")
        require(self.kind in KINDS, "scenario.kind", f"must be one of {', '.join(KINDS)}, got {self.kind!r}")
        require(self.repeats is None or 1 <= self.repeats <= 50, "scenario.repeats",
                f"must be 1..50, got {self.repeats}")
        self.study.check()
        labels = [p.label for p in self.phases]
        require(len(set(labels)) == len(labels), "scenario.phases", f"labels must be unique, got {labels}")
        require(self.baseline is None or self.baseline in labels, "scenario.baseline",
                f"{self.baseline!r} is not a phase label ({', '.join(labels) or 'no phases'})")
        for g in self.mix:
            require(1 <= g.guests <= 256, f"scenario.mix[{g.workload}].guests", f"must be 1..256, got {g.guests}")
            require(all(o.startswith("workload.") for o in g.overrides), f"scenario.mix[{g.workload}].overrides",
                    "may only set workload.* values")
        for p in self.phases:
            require(not any(o.startswith(("scenario=", "scenario.phases")) for o in p.overrides),
                    f"scenario.phases[{p.label}]", "a phase cannot change the scenario itself")

