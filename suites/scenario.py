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


@dataclass
class PhaseConfig:
    label: str = MISSING
    overrides: list[str] = field(default_factory=list)  # Hydra overrides on top of the command line's


@dataclass
class ScenarioConfig:
    name: str = MISSING
    guests: int = 1  # guests of the selected profile, all running the selected workload
    start_timeout_s: float = 300.0  # all guests must reach the start barrier within this
    timeout_s: float = 3600.0  # wall-clock limit for the run after the barrier
    cpu_overcommit: bool = False  # allow more vCPUs than host cores (affinities then overlap)
    phases: list[PhaseConfig] = field(default_factory=list)  # empty: a single run
    baseline: Optional[str] = None  # label of the phase the others are normalised to (default: the first)

    def check(self) -> None:
        require(1 <= self.guests <= 256, "scenario.guests", f"must be 1..256, got {self.guests}")
        require(self.start_timeout_s > 0, "scenario.start_timeout_s", f"must be > 0, got {self.start_timeout_s}")
        require(self.timeout_s > 0, "scenario.timeout_s", f"must be > 0, got {self.timeout_s}")
        labels = [p.label for p in self.phases]
        require(len(set(labels)) == len(labels), "scenario.phases", f"labels must be unique, got {labels}")
        require(self.baseline is None or self.baseline in labels, "scenario.baseline",
                f"{self.baseline!r} is not a phase label ({', '.join(labels) or 'no phases'})")
        for p in self.phases:
            require(not any(o.startswith(("scenario=", "scenario.phases")) for o in p.overrides),
                    f"scenario.phases[{p.label}]", "a phase cannot change the scenario itself")


ConfigStore.instance().store(group="scenario", name="base_scenario", node=ScenarioConfig)
