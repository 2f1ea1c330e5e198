"""Scenario schema: how many guests of the profile run, and their limits."""

from __future__ import annotations

from dataclasses import dataclass

from hydra.core.config_store import ConfigStore
from omegaconf import MISSING

from suites.errors import require


@dataclass
class ScenarioConfig:
    name: str = MISSING
    guests: int = 1  # guests of the selected profile, all running the selected workload
    start_timeout_s: float = 300.0  # all guests must reach the start barrier within this
    timeout_s: float = 3600.0  # wall-clock limit for the run after the barrier
    cpu_overcommit: bool = False  # allow more vCPUs than host cores (affinities then overlap)

    def check(self) -> None:
        require(1 <= self.guests <= 256, "scenario.guests", f"must be 1..256, got {self.guests}")
        require(self.start_timeout_s > 0, "scenario.start_timeout_s", f"must be > 0, got {self.start_timeout_s}")
        require(self.timeout_s > 0, "scenario.timeout_s", f"must be > 0, got {self.timeout_s}")


ConfigStore.instance().store(group="scenario", name="base_scenario", node=ScenarioConfig)
