"""Scenario schema: how many guests of the profile run, their limits, and optional phases.

A scenario with ``phases`` is a comparison: each phase is the same run with a
few more overrides (another profile, more guests), and the runner reports
every phase normalised to the baseline phase.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from hydra.core.config_store import ConfigStore
from omegaconf import MISSING

from suites.errors import require

KINDS = ("plain", "mixed", "consolidation")


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


@dataclass
class StudyConfig:
    """The mixed-workload study (``kind: mixed`` and ``kind: consolidation``)."""

    profiles: list[str] = field(default_factory=list)  # empty: the profile selected on the command line
    cad: GuestGroup = field(default_factory=lambda: GuestGroup(workload="graphics-replay"))
    ml: GuestGroup = field(default_factory=lambda: GuestGroup(workload="mnist-torch"))
    with_ml: bool = True  # consolidation: one ML guest runs beside the CAD guests
    max_guests: int = 4  # consolidation: stop adding CAD guests here (or at the profile's capacity)
    qos_p95_frame_ms: float = 100.0  # consolidation QoS: every CAD guest's p95 frame time at most this
    qos_ml_slowdown_pct: float = 15.0  # and the ML guest at most this much slower than alone

    def check(self) -> None:
        require(self.max_guests >= 1, "scenario.study.max_guests", f"must be >= 1, got {self.max_guests}")
        require(self.qos_p95_frame_ms > 0, "scenario.study.qos_p95_frame_ms", "must be > 0")
        require(self.qos_ml_slowdown_pct >= 0, "scenario.study.qos_ml_slowdown_pct", "must be >= 0")


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
    study: StudyConfig = field(default_factory=StudyConfig)

    def check(self) -> None:
        require(1 <= self.guests <= 256, "scenario.guests", f"must be 1..256, got {self.guests}")
        require(self.start_timeout_s > 0, "scenario.start_timeout_s", f"must be > 0, got {self.start_timeout_s}")
        require(self.timeout_s > 0, "scenario.timeout_s", f"must be > 0, got {self.timeout_s}")
        require(self.kind in KINDS, "scenario.kind", f"must be one of {', '.join(KINDS)}, got {self.kind!r}")
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


ConfigStore.instance().store(group="scenario", name="base_scenario", node=ScenarioConfig)
