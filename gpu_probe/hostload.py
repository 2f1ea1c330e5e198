"""The CPU that processes other than the run's own use on the host, and the CPU the hypervisor steals.

A benchmark on a host something else keeps busy measures that contention, not its profile. The suite looks before
a run starts (:func:`other_load`: a short window) and the sampler looks during it (:class:`CpuClock` per row): the
host's busy CPU time (``/proc/stat``) less this process tree's (the runner and, during a run, its guests).
Steal time is what a VM's hypervisor gave other VMs while this one had work; 0 on bare metal.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

import psutil

# /proc/stat counts in clock ticks (10 ms): over a span of a few ms one tick on a few cores reads as several cores
# busy. An H200's study saw 658 % "other processes" in a run's first row (the sampler's first read, 3 ms after its
# clock started), which alone lifted the run's mean past host_busy_pct on a quiet 16-core host.
MIN_SPAN_S = 0.05


class CpuClock:
    """Host busy and steal CPU between two reads, in % of one core (100 = one core busy for the whole span)."""

    def __init__(self) -> None:
        self._last, self._t = psutil.cpu_times(), time.monotonic()

    def read(self) -> tuple[float, float]:
        """(busy, steal) since the last read that gave figures; NaN for a span under MIN_SPAN_S, which the next read
        then covers."""
        now, t = psutil.cpu_times(), time.monotonic()
        span = t - self._t
        if span < MIN_SPAN_S:
            return float("nan"), float("nan")
        last, self._last, self._t = self._last, now, t
        idle = ("idle", "iowait", "steal")
        busy = sum(getattr(now, f) - getattr(last, f) for f in now._fields
                   if f not in idle and f not in ("guest", "guest_nice"))  # guest time is already in user
        steal = getattr(now, "steal", 0.0) - getattr(last, "steal", 0.0)
        return 100.0 * busy / span, 100.0 * steal / span


def tree_cpu_s(pid: int) -> float:
    """CPU seconds of a process and its live descendants (0 for one that is gone)."""
    try:
        root = psutil.Process(pid)
        procs = [root, *root.children(recursive=True)]
    except psutil.Error:
        return 0.0
    total = 0.0
    for p in procs:
        try:
            t = p.cpu_times()
            total += t.user + t.system
        except psutil.Error:
            continue
    return total


@dataclass(frozen=True)
class HostLoad:
    """What the host did besides this process tree over ``seconds``."""

    other_pct: float  # CPU of other processes, % of one core
    steal_pct: float  # CPU stolen by the hypervisor, % of one core
    seconds: float

    def text(self) -> str:
        steal = f", steal {self.steal_pct:.0f} % of a core" if self.steal_pct >= 1 else ""
        return f"other processes: {self.other_pct:.0f} % of a core{steal}"


def other_load(seconds: float = 0.5, pid: int | None = None) -> HostLoad:
    """The host's load besides ``pid``'s tree (this process by default) over a window of ``seconds``."""
    pid = os.getpid() if pid is None else pid
    clock, own0, t0 = CpuClock(), tree_cpu_s(pid), time.monotonic()
    time.sleep(seconds)
    busy, steal = clock.read()
    span = time.monotonic() - t0
    own = 100.0 * (tree_cpu_s(pid) - own0) / span if span > 0 else 0.0
    return HostLoad(max(0.0, busy - own), steal, span)
