"""What a scenario run produced, as plain data: what recording and rendering read (no live objects)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpu_probe.inventory import Inventory
from gpu_probe.sampler import SampleSet
from suites.backends.placement import Placement
from suites.guest.protocol import GuestResult, GuestSpec

EXIT_PARTIAL = 1
EXIT_INTERRUPTED = 130


@dataclass
class GuestOutcome:
    spec: GuestSpec
    placement: Placement
    result: GuestResult
    log_path: Path
    sampled: dict[str, float] = field(default_factory=dict)  # sampler aggregates for this guest


@dataclass
class ScenarioOutcome:
    status: str  # ok | partial | failed | interrupted
    guests: list[GuestOutcome]
    makespan_s: float | None
    reasons: list[str]
    inventory: Inventory
    data: dict[str, Any]
    samples: SampleSet
    host_metrics: dict[str, float] = field(default_factory=dict)  # host/GPU aggregates, sampler rate, energy

    @property
    def exit_code(self) -> int:
        return {"ok": 0, "interrupted": EXIT_INTERRUPTED}.get(self.status, EXIT_PARTIAL)

    @property
    def ok_guests(self) -> list[GuestOutcome]:
        return [o for o in self.guests if o.result.ok]
