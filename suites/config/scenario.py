"""Scenario schema: how many guests of the profile run, their limits, and optional phases.

A scenario with ``phases`` is a comparison: each phase is the same run with a
few more overrides (another profile, more guests), and the runner reports
every phase normalised to the baseline phase.
"""

from __future__ import annotations

import functools
import warnings
from dataclasses import dataclass, field, fields, is_dataclass
from typing import Optional

from omegaconf import MISSING, DictConfig, OmegaConf, read_write

from suites.errors import RenamedSetting, require
from suites.run_kinds import SCENARIO_KINDS, RunKind

# Config keys renamed, the new prefix -> the old: a run's params carry both for a release, so a reader of stored
# runs (MLflow's compare page, a notebook, make compare) that asks for the old name still finds it
RENAMED = {"scenario.mixed.": "scenario.study.", "scenario.groups": "scenario.mix",
           "scenario.mixed.counts": "scenario.mixed.steps",  # counts_past_miss: steps_past_miss, by the prefix
           "profile.gpu_access": "profile.kind"}
OLD_COUNT_NAMES = {"steps": "counts", "steps_past_miss": "counts_past_miss"}  # MixedConfig's, old -> new
DEFAULT_REPEATS = 3  # a comparison's repeats per phase unless scenario.repeats says otherwise
# The mixed scenario's phases per profile: CAD guests alone, CAD + ML at once, ML alone.
CAD_ALONE, CAD_AND_ML, ML_ALONE = "cad", "mixed", "ml"


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
    groups: list[GuestGroup] = field(default_factory=list)  # replaces scenario.groups in this phase when given
    reference: Optional[str] = None  # the reference study's figure for this phase, shown beside this host's
    mix: list[GuestGroup] = field(default_factory=list)  # the old name of groups: read for a release, said

    def __post_init__(self) -> None:
        self.groups = groups_of(self.groups, self.mix, "scenario.phases[].mix")
        self.mix = []


@dataclass
class MixedConfig:
    """The mixed CAD + ML scenarios (``kind: mixed`` and ``kind: consolidation``), set under ``scenario.mixed``
    (``scenario.study`` until issue 64: that name is still read for a release, said)."""

    profiles: list[str] = field(default_factory=list)  # empty: the profile selected on the command line
    cad: GuestGroup = field(default_factory=lambda: GuestGroup(workload="graphics-replay"))
    ml: GuestGroup = field(default_factory=lambda: GuestGroup(workload="mnist-torch"))
    with_ml: bool = True  # consolidation: one ML guest runs beside the CAD guests
    # consolidation: one CAD guest alone first too, so each count's CAD slowdown has its baseline (make size)
    cad_alone: bool = False
    max_guests: int = 4  # consolidation: stop adding CAD guests here (or at the profile's capacity)
    # consolidation: the CAD guest counts measured, in order ([]: every count 1..max_guests); a count skipped is
    # never shown as measured (make size interpolates one, labelled predicted)
    counts: list[int] = field(default_factory=list)
    qos_p95_frame_ms: float = 100.0  # consolidation QoS: every CAD guest's p95 frame time at most this
    qos_ml_slowdown_pct: float = 15.0  # and the ML guest at most this much slower than alone
    qos_cad_slowdown_pct: float = 5.0  # mixed verdict: CAD run time at most this much longer beside ML
    # consolidation: counts measured past the first that misses QoS, so the curve shows where QoS breaks and by how
    # much
    counts_past_miss: int = 2
    # The reference study's finding per profile, shown beside this host's figures (configs/scenario/mixed.yaml).
    reference: dict[str, str] = field(default_factory=dict)
    # The old names of counts and counts_past_miss ("step" is a training step's word): read for a release, said
    steps: Optional[list[int]] = None
    steps_past_miss: Optional[int] = None

    def __post_init__(self) -> None:
        given = [old for old in OLD_COUNT_NAMES if getattr(self, old) is not None]
        for old in given:
            setattr(self, OLD_COUNT_NAMES[old], getattr(self, old))
            setattr(self, old, None)
        if given:
            warnings.warn(", ".join(f"scenario.mixed.{old} is {OLD_COUNT_NAMES[old]}" for old in given)
                          + " now (a consolidation's guest counts; the old name is read until the next release)",
                          RenamedSetting, stacklevel=2)

    def check(self) -> None:
        require(self.max_guests >= 1, "scenario.mixed.max_guests", f"must be >= 1, got {self.max_guests}")
        require(all(1 <= n <= 64 for n in self.counts) and self.counts == sorted(set(self.counts)),
                "scenario.mixed.counts", f"must be increasing counts 1..64, got {list(self.counts)}")
        require(self.qos_p95_frame_ms > 0, "scenario.mixed.qos_p95_frame_ms", "must be > 0")
        require(self.qos_ml_slowdown_pct >= 0, "scenario.mixed.qos_ml_slowdown_pct", "must be >= 0")
        require(self.qos_cad_slowdown_pct >= 0, "scenario.mixed.qos_cad_slowdown_pct", "must be >= 0")
        require(0 <= self.counts_past_miss <= 64, "scenario.mixed.counts_past_miss",
                f"must be 0..64, got {self.counts_past_miss}")


def counts_of(settings: MixedConfig) -> list[int]:
    """The CAD guest counts a consolidation measures: its counts, else every count 1..max_guests."""
    return list(settings.counts) or list(range(1, settings.max_guests + 1))


@dataclass
class ScenarioConfig:
    name: str = MISSING
    guests: int = 1  # guests of the selected profile, all running the selected workload
    start_timeout_s: float = 300.0  # all guests must reach the start barrier within this
    timeout_s: float = 3600.0  # wall-clock limit for the run after the barrier
    cpu_overcommit: bool = False  # allow more vCPUs than host cores (affinities then overlap)
    phases: list[PhaseConfig] = field(default_factory=list)  # empty: a single run
    baseline: Optional[str] = None  # label of the phase the others are normalised to (default: the first)
    groups: list[GuestGroup] = field(default_factory=list)  # non-empty: these groups instead of guests x workload
    kind: str = RunKind.PLAIN  # plain | mixed (3 phases per profile) | consolidation (add CAD guests until QoS fails)
    mixed: MixedConfig = field(default_factory=MixedConfig)
    # The old name of ``mixed`` (the reference study's word, which now names make study alone): what is set under it
    # (what differs from its defaults) is taken as set under ``mixed``, said; read for one release
    study: MixedConfig = field(default_factory=MixedConfig)
    mix: list[GuestGroup] = field(default_factory=list)  # the old name of groups (sizing's mix is of users): as study
    # A comparison runs every phase this often, interleaved (A B C A B C), for spread and verdicts; unset: 3
    # (a consolidation's steps: in a row, A A A B B B, each judged on all of its repeats). The smoke experiment
    # sets 1 (n=1, no spread).
    repeats: Optional[int] = None

    def __post_init__(self) -> None:
        self.groups, self.mix = groups_of(self.groups, self.mix, "scenario.mix"), []
        renamed = moved(self.study, MixedConfig(), self.mixed)
        if renamed:
            keys = ", ".join(f"scenario.study.{k}" for k in renamed)
            warnings.warn(f"scenario.study is scenario.mixed now: {keys} taken as scenario.mixed.* (the old name is "
                          "read until the next release)", RenamedSetting, stacklevel=2)
            self.study = MixedConfig()

    @property
    def compares(self) -> bool:
        """Several phases (declared, or generated by a mixed scenario) rather than one run."""
        return bool(self.phases) or self.kind != RunKind.PLAIN

    @property
    def phase_repeats(self) -> int:
        """A consolidation's counts run their repeats in a row (each count judged on all of them), the other
        comparisons' phases interleaved."""
        return self.repeats if self.repeats is not None else (DEFAULT_REPEATS if self.compares else 1)

    def check(self) -> None:
        require(1 <= self.guests <= 256, "scenario.guests", f"must be 1..256, got {self.guests}")
        require(self.start_timeout_s > 0, "scenario.start_timeout_s", f"must be > 0, got {self.start_timeout_s}")
        require(self.timeout_s > 0, "scenario.timeout_s", f"must be > 0, got {self.timeout_s}")
        require(self.kind in SCENARIO_KINDS, "scenario.kind",
                f"must be one of {', '.join(SCENARIO_KINDS)}, got {self.kind!r}")
        require(self.repeats is None or 1 <= self.repeats <= 50, "scenario.repeats",
                f"must be 1..50, got {self.repeats}")
        self.mixed.check()
        labels = [p.label for p in self.phases]
        require(len(set(labels)) == len(labels), "scenario.phases", f"labels must be unique, got {labels}")
        require(self.baseline is None or self.baseline in labels, "scenario.baseline",
                f"{self.baseline!r} is not a phase label ({', '.join(labels) or 'no phases'})")
        for g in self.groups:
            require(1 <= g.guests <= 256, f"scenario.groups[{g.workload}].guests", f"must be 1..256, got {g.guests}")
            require(all(o.lstrip("+").startswith("workload.") for o in g.overrides),  # +: a key of a dict field
                    f"scenario.groups[{g.workload}].overrides", "may only set workload.* values")
        for p in self.phases:
            require(not any(o.startswith(("scenario=", "scenario.phases")) for o in p.overrides),
                    f"scenario.phases[{p.label}]", "a phase cannot change the scenario itself")



def groups_of(groups: list[GuestGroup], old: list[GuestGroup], old_key: str) -> list[GuestGroup]:
    """``groups``, or the groups given under the old name ``old_key`` (said): a scenario file's groups overridden
    under the old name on the command line are overridden."""
    if not old:
        return groups
    warnings.warn(f"{old_key} is {old_key.replace('mix', 'groups')} now (the old name is read until the next "
                  "release)", RenamedSetting, stacklevel=2)
    return list(old)


def moved(old: object, default: object, new: object, prefix: str = "") -> list[str]:
    """Each field of the dataclass ``old`` that differs from ``default`` set on ``new`` (nested dataclasses field by
    field: one field set under a group leaves the group's others as ``new`` has them); their dotted names."""
    names = []
    for f in fields(old):  # type: ignore[arg-type]
        value, was = getattr(old, f.name), getattr(default, f.name)
        if is_dataclass(value) and is_dataclass(was):
            names += moved(value, was, getattr(new, f.name), f"{prefix}{f.name}.")
        elif value != was:
            setattr(new, f.name, value)
            names.append(prefix + f.name)
    return names


def with_old_names(params: dict[str, object]) -> dict[str, object]:
    """``params`` (a run's config, flattened) with each renamed key's value under its old name too (RENAMED)."""
    out = dict(params)
    for new, old in RENAMED.items():
        out.update({old + k[len(new):]: v for k, v in params.items() if k.startswith(new)})
    return out


@functools.cache
def default_mixed() -> dict:
    """A MixedConfig of its defaults, as a composed node reads back (``scenario.study`` when nothing was set in it)."""
    return OmegaConf.to_container(OmegaConf.structured(MixedConfig))  # type: ignore[return-value]


def settle(node: DictConfig, scenario: ScenarioConfig) -> None:
    """The composed scenario node as its dataclass read it: what was given under an old name (scenario.study,
    scenario.mix, scenario.mixed.steps) is in the node under the new one, so a run's params (made from the node)
    record what ran, under both names (:func:`with_old_names`), never the new name's default. A node with no old name
    in it is left as it is (rebuilding its two nodes was 14 ms of every composition's 25 ms load)."""
    if not node.mix and not any(node.mixed[old] is not None for old in OLD_COUNT_NAMES) \
            and OmegaConf.to_container(node.study) == default_mixed():
        return
    with read_write(node):
        node.mixed = OmegaConf.structured(scenario.mixed)
        node.study = OmegaConf.structured(scenario.study)
        if node.mix:
            node.groups, node.mix = [OmegaConf.structured(g) for g in scenario.groups], []
