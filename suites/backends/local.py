"""``backend=local``: each guest is a process on this host, on disjoint cores of this runner's affinity."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from gpu_probe.inventory import Inventory
from suites.backends import corelock
from suites.backends.base import Backend
from suites.backends.handle import GuestHandle, GuestPipe
from suites.backends.placement import Placement, place_on_host
from suites.config.profiles import ProfileConfig
from suites.errors import PlacementError
from suites.guest.protocol import GuestSpec


class LocalBackend(Backend):
    name = "local"
    holds_host_cores = True
    forks_guests = True

    def __init__(self, cpu_overcommit: bool = False, mps: bool = False) -> None:
        self.cpu_overcommit = cpu_overcommit
        self.mps = mps  # sharing=mps: guests get MPS limits; the runner starts the daemon (suites/backends/mps.py)

    def place(self, profile: ProfileConfig, n: int, inv: Inventory) -> list[Placement]:
        return on_free_cores(lambda free: place_on_host(profile, n, inv, free, cpu_overcommit=self.cpu_overcommit
                                                        and bool(free), mps=self.mps))

    def start(self, specs: list[GuestSpec], placements: list[Placement], log_dir: Path,
              started: list[GuestHandle]) -> None:
        for s in specs:
            log = log_dir / f"{s.guest_id}.log"
            started.append(GuestHandle(s, log, GuestPipe(log, self.forks)))
            started[-1].start()


def on_free_cores(place: Callable[[list[int]], list[Placement]]) -> list[Placement]:
    """``place`` on the cores of this runner's affinity that no other benchmark run holds
    (suites/backends/corelock.py): a run that does not fit beside another is refused naming it (CoresHeld, which
    ``wait_for_cores_s`` waits out), unless it would not fit alone either, which is said instead; one that fits
    says it has company."""
    host_cpus = sorted(os.sched_getaffinity(0))  # Linux: the cores this runner may hand out
    held = corelock.held_by_others(host_cpus)
    free = [c for c in host_cpus if c not in held]
    try:
        placements = place(free)
    except PlacementError as exc:
        if not held:
            raise
        try:  # would it fit with the host to itself? if not, waiting for the others' cores cannot help
            place(host_cpus)
        except PlacementError as alone:
            raise alone from None
        wanted = getattr(exc, "vcpus_wanted", None)
        short = f"{wanted} vCPUs wanted, " if wanted else ""
        raise corelock.CoresHeld(f"{short}{len(free)} of {len(host_cpus)} cores free: another benchmark run on this "
                                 f"host holds {corelock.describe(held)}; run again when it ends, or give "
                                 "wait_for_cores_s=<seconds> (default 600) to wait for it",
                                 corelock.describe(held, short=True)) from exc
    if held:
        company = (f"another benchmark run holds {corelock.describe(held)} on this host: caches, memory "
                   "bandwidth and GPUs are shared with it")
        for p in placements:
            p.note = "; ".join(x for x in (p.note, company) if x)
    return placements
