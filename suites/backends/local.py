"""``backend=local``: each guest is a process on this host, on disjoint cores of this runner's affinity."""

from __future__ import annotations

import os
from pathlib import Path

from gpu_probe.inventory import Inventory
from suites.backends.base import Backend
from suites.backends.handle import GuestHandle
from suites.backends.placement import Placement, place_on_host
from suites.config.profiles import ProfileConfig
from suites.guest.protocol import GuestSpec


class LocalBackend(Backend):
    name = "local"

    def __init__(self, cpu_overcommit: bool = False) -> None:
        self.cpu_overcommit = cpu_overcommit

    def place(self, profile: ProfileConfig, n: int, inv: Inventory) -> list[Placement]:
        host_cpus = sorted(os.sched_getaffinity(0))  # Linux: the cores this runner may hand out
        return place_on_host(profile, n, inv, host_cpus, cpu_overcommit=self.cpu_overcommit)

    def start(self, specs: list[GuestSpec], placements: list[Placement], log_dir: Path,
              started: list[GuestHandle]) -> None:
        for s in specs:
            started.append(GuestHandle(s, log_dir / f"{s.guest_id}.log"))
            started[-1].start()
