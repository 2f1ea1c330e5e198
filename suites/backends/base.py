"""The backend interface: where guests run. ``place`` before anything starts, ``start``, ``supervise``, ``shutdown``.

Every backend hands the runner :class:`~suites.backends.handle.GuestHandle`
objects speaking the same protocol, so the barrier, the time limit and the
memory limit (:meth:`Backend.supervise`) are written once, here.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from gpu_probe.inventory import Inventory
from gpu_probe.shapes import JsonObject
from suites.backends.forkserver import ForkServer
from suites.backends.handle import GuestHandle
from suites.backends.placement import Placement
from suites.config.profiles import ProfileConfig
from suites.guest.protocol import GuestSpec

Tick = Callable[[list[GuestHandle]], None]  # called every poll with the guests (live progress)
POLL_S = 0.02  # a guest ready or done is noticed within it: 25 ms on average of every repeat at 0.05
MEM_CHECK_S = 1.0  # how often guests' memory is read (a process-tree walk each)


@dataclass
class Timing:
    """Filled in as supervision goes, so an interrupt still leaves what was reached (epoch seconds)."""

    t_start: float | None = None  # guests being started
    t_release: float | None = None  # the start barrier released every guest
    t_end: float | None = None  # every guest finished


class Backend(ABC):
    name: str
    holds_host_cores = False  # its guests are pinned to this host's cores (leased for the run: corelock)
    # The preloaded guest its comparison shares among its runs (suites/backends/forkserver.py), for a backend whose
    # guests are processes of this host (local); None: each guest started on its own
    forks: ForkServer | None = None
    forks_guests = False  # whether it starts its guests from ``forks`` where their workload may be forked

    @abstractmethod
    def place(self, profile: ProfileConfig, n: int, inv: Inventory) -> list[Placement]:
        """Where ``n`` guests of ``profile`` go, or a PlacementError with the numbers that do not fit."""

    @abstractmethod
    def start(self, specs: list[GuestSpec], placements: list[Placement], log_dir: Path,
              started: list[GuestHandle]) -> None:
        """Start every guest, appending each to ``started`` as it exists (so an interrupt can stop it)."""

    def supervise(self, guests: list[GuestHandle], tick: Tick, start_timeout_s: float, timeout_s: float,
                  timing: Timing) -> None:
        """Wait at the start barrier, release every guest at once, supervise them to the end."""
        # set-up (imports, data, model) counts against the guest's memory too
        pump_until(guests, tick, lambda g: g.state != "starting", start_timeout_s,
                   f"did not reach the start barrier within {start_timeout_s:.0f} s", " during set-up")
        timing.t_release = time.time()
        for g in guests:
            g.release()
        pump_until(guests, tick, lambda g: g.finished, timeout_s,
                   f"timed out after scenario.timeout_s={timeout_s:.0f} s", on_poll=stop_open_ended)
        tick(guests)
        timing.t_end = time.time()

    def check_data(self, data: JsonObject) -> None:  # noqa: B027 (only a multi-node backend overrides it)
        """Raise DataError where a guest would not find ``data`` (the runner resolved it on this host)."""

    def shutdown(self) -> None:  # noqa: B027 (optional: only a backend holding a connection overrides it)
        """Release what the backend holds (a cluster connection); guests are already stopped."""


def pump_until(guests: list[GuestHandle], tick: Tick, settled: Callable[[GuestHandle], bool], timeout_s: float,
               overdue: str, when: str = "", on_poll: Callable[[list[GuestHandle]], None] | None = None) -> None:
    """Until every guest is ``settled``: its events, progress, the time limit (a guest not settled by then is
    stopped with ``overdue``), the memory limit (``when`` says in which phase); ``on_poll`` after each poll."""
    deadline = time.monotonic() + timeout_s
    next_mem_check = 0.0
    while not all(settled(g) for g in guests):
        for g in guests:
            g.pump()
        if on_poll is not None:
            on_poll(guests)
        tick(guests)
        now = time.monotonic()
        if now > deadline:
            for g in guests:
                if not settled(g):
                    g.kill(overdue)
        if now > next_mem_check:
            next_mem_check = now + MEM_CHECK_S
            check_memory(guests, when)
        time.sleep(POLL_S)


def stop_open_ended(guests: list[GuestHandle]) -> None:
    """Open-ended guests (``workload.until_stopped``: an ML guest that trains for the CAD guests' whole replay) are
    told to stop once every guest beside them that is not open-ended has finished (at once where there is none:
    they then train for their ``workload.min_window_s``)."""
    if all(g.finished for g in guests if not g.open_ended):
        for g in guests:
            if g.open_ended:
                g.stop()


def check_memory(guests: list[GuestHandle], when: str = "") -> None:
    """Stop every running guest whose process tree holds more than its profile's memory, saying so."""
    for g in guests:
        rss = g.rss_MiB() if not g.finished else 0.0
        if rss > g.spec.memory_MiB:
            g.kill(f"guest memory exceeded{when}: RSS {rss:.0f} MiB > profile {g.spec.memory_MiB} MiB")
