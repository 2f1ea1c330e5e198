"""Background sampling of host, guest and GPU load (collect / aggregate).

A :class:`Sampler` is a context manager: a daemon thread takes one row of readings per period until the block exits,
whatever exception ends it. It only measures; writing the rows anywhere (MLflow, CSV) is the caller's job, so a slow
tracking server can never stall or skew sampling.
"""

from __future__ import annotations

import math
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import psutil

from gpu_probe import procfs, virtualization, vocab
from gpu_probe.hostload import CpuClock
from gpu_probe.nvml import NA, Nvml, as_float, decode_clock_events
from gpu_probe.procfs import FOREIGN_PIDS, foreign_pid_namespace
from gpu_probe.remote import NAN, RemoteUsage, merge_rows, node_notes
from gpu_probe.shapes import JsonObject, Row
from gpu_probe.stats import summarize

AGGREGATES = ("mean", "p95", "max")


class ProcessTree:
    """CPU % and RSS of a guest's root process and all its descendants.

    Finding descendants means reading every /proc/<pid>/stat, so membership
    is refreshed from one shared parent map (see :meth:`Sampler.collect`),
    not on every tick; each member's stat file stays open between samples.
    """

    def __init__(self, pid: int, descendants: bool = True) -> None:
        self.root_pid = pid
        self.descendants = descendants  # False: the root alone (its children are watched on their own)
        self.members: dict[int, procfs.ProcStat] = {pid: procfs.ProcStat(pid)}
        self._last: dict[int, tuple[float, float]] = {}  # pid -> (CLOCK_BOOTTIME s, cpu seconds)

    def refresh(self, children_of: dict[int, list[int]]) -> None:
        pids, todo = set(), [self.root_pid]
        while todo:
            pid = todo.pop()
            if pid not in pids:
                pids.add(pid)
                todo.extend(children_of.get(pid, ()) if self.descendants else ())
        for pid in pids - set(self.members):
            try:
                self.members[pid] = procfs.ProcStat(pid)
            except OSError:
                continue
        for pid in set(self.members) - pids:
            self.members.pop(pid).close()

    def read(self, since: float | None = None) -> tuple[float, float, set[int]]:
        """(CPU % since the last read, 100 = one core; RSS MiB; live pids); NaN readings once all are gone.
        ``since`` (CLOCK_BOOTTIME s): the sampler's previous reading. A process first seen now then counts the CPU
        it used since (all of it if born after, else its life's CPU pro rata): left out, a guest's first 0.1 s
        (its interpreter starting, a core's worth) read as another process's load in every run's first rows."""
        cpu = rss = 0.0
        pids = set()
        now = time.clock_gettime(time.CLOCK_BOOTTIME)  # the clock /proc's start times count in
        for pid, stat in list(self.members.items()):
            reading = stat.read()
            if reading is None:
                del self.members[pid]
                self._last.pop(pid, None)
                continue
            cpu_s, rss_bytes = reading
            prev = self._last.get(pid)
            if prev and now > prev[0]:
                cpu += 100.0 * (cpu_s - prev[1]) / (now - prev[0])
            elif prev is None and since is not None and now > since and now > stat.born_s:
                cpu += 100.0 * cpu_s * (now - max(stat.born_s, since)) / (now - stat.born_s) / (now - since)
            self._last[pid] = (now, cpu_s)
            rss += rss_bytes
            pids.add(pid)
        if not pids:
            return NAN, NAN, pids
        return cpu, rss / vocab.MiB, pids


class Sampler:
    """Samples at ``rate_hz`` on a background thread; rows land in ``self.rows``."""

    def __init__(self, rate_hz: float = 10.0, nvml: Nvml | None = None, tree_refresh_s: float = 1.0) -> None:
        if rate_hz <= 0:
            raise ValueError(f"sampler rate must be > 0 Hz, got {rate_hz}")
        self.rate_hz = rate_hz
        self.tree_refresh_s = tree_refresh_s  # how soon a guest's new child processes are counted
        self._next_refresh = 0.0
        self.nvml = nvml if nvml is not None else Nvml()
        self.rows: list[Row] = []
        self.errors = 0
        self.t0 = 0.0
        self.t_end = 0.0
        self._guests: dict[str, ProcessTree | RemoteUsage] = {}
        self._helpers: list[ProcessTree] = []  # the run's own processes outside this one's tree (an MPS daemon)
        self._joined: dict[str, RemoteUsage] = {}  # rows a guest's VM sampled itself, joined to these by time
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._gpu_count = 0
        self._vgpu_hosts: list[int] = []
        self._vgpu_util = virtualization.VgpuUtilization(self.nvml)
        self.util_samples: dict[int, list[tuple[float, float]]] = {}  # the driver's own, for timed windows
        self._clock_events: dict[int, int] = {}
        self.cpu_s = 0.0  # CPU time spent in collect(), measured by the sampler thread itself
        self.attribution_note = ""  # set when NVML's pids cannot be matched to the guests' (FOREIGN_PIDS)
        self._cpu_clock: CpuClock | None = None
        self._own = procfs.ProcStat(os.getpid())  # the runner itself (its sampler thread included)
        self._own_last: tuple[float, float] | None = None
        self._last_boot: float | None = None  # CLOCK_BOOTTIME of the previous collect()

    @property
    def gpu_status(self) -> str:
        return f"{self._gpu_count} GPU(s)" if self._gpu_count else (self.nvml.reason or vocab.NO_GPU)

    def watch(self, guest_id: str, pid: int) -> None:
        """Follow a guest's process tree from now on (thread-safe)."""
        try:
            tree = ProcessTree(pid)
        except OSError:  # already gone
            return
        with self._lock:
            self._guests[guest_id] = tree
            self._next_refresh = 0.0  # pick up its children on the next tick

    def watch_helper(self, pid: int, descendants: bool = True) -> None:
        """Count ``pid``'s tree (``descendants`` False: it alone) as the run's own CPU, not another process's
        (thread-safe): an MPS daemon the run started and its server; the zygote its guests are forked from."""
        try:
            tree = ProcessTree(pid, descendants)
        except OSError:
            return
        with self._lock:
            self._helpers.append(tree)
            self._next_refresh = 0.0

    def join_rows(self, guest_id: str, source: RemoteUsage) -> None:
        """Join the rows ``source`` is handed (a VM's own sampler: its GPU as the VM's driver sees it) to this
        sampler's by time, beside the guest's process tree this sampler follows itself (thread-safe)."""
        with self._lock:
            self._joined[guest_id] = source

    def watch_source(self, guest_id: str, source: RemoteUsage) -> None:
        """Take a guest's readings from ``source`` (a guest on another node) instead of /proc."""
        with self._lock:
            self._guests[guest_id] = source

    # -- lifecycle --------------------------------------------------------------
    def prepare(self) -> "Sampler":
        """Open NVML and learn the GPUs; enough to call collect() by hand."""
        if not self.nvml.available:
            self.nvml.open()
        self._gpu_count = self.nvml.device_count()
        self._vgpu_hosts = [i for i in range(self._gpu_count)
                            if virtualization.virtualization_mode(self.nvml, self.nvml.handle(i)) == "vgpu-host"]
        psutil.cpu_percent(None)  # prime the host counter
        self._cpu_clock = CpuClock()
        reading = self._own.read()
        self._own_last = (time.monotonic(), reading[0]) if reading is not None else None
        self.t0 = time.time()
        return self

    def __enter__(self) -> "Sampler":
        self.prepare()
        self._thread = threading.Thread(target=self._loop, name="gpu_probe-sampler", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self.t_end = time.time()
        self.nvml.close()

    def _loop(self) -> None:
        period = 1.0 / self.rate_hz
        tick = 0
        while not self._stop.is_set():
            c0 = time.thread_time()
            try:
                self.rows.append(self.collect())
            except Exception:  # one bad reading must not end sampling
                self.errors += 1
            self.cpu_s += time.thread_time() - c0
            tick += 1
            # Schedule against the start time so the rate does not drift with collect() cost.
            delay = self.t0 + tick * period - time.time()
            if delay < 0:
                tick = int((time.time() - self.t0) / period) + 1
                delay = self.t0 + tick * period - time.time()
            self._stop.wait(max(delay, 0.0))

    # -- collect ----------------------------------------------------------------
    def collect(self) -> Row:
        """One row: host, each watched guest, each GPU."""
        row: Row = {"t_s": time.time() - self.t0}
        since, self._last_boot = self._last_boot, time.clock_gettime(time.CLOCK_BOOTTIME)
        row[vocab.HOST_CPU.key] = psutil.cpu_percent(None)
        row[vocab.HOST_MEM_USED.key] = psutil.virtual_memory().used / vocab.MiB
        with self._lock:
            guests, helpers = dict(self._guests), list(self._helpers)
            refresh = bool(guests or helpers) and time.monotonic() >= self._next_refresh
            if refresh:
                self._next_refresh = time.monotonic() + self.tree_refresh_s
        if refresh:
            children = procfs.children_map()
            for tree in [*guests.values(), *helpers]:
                tree.refresh(children)
        guest_pids: dict[str, set[int]] = {}
        local_cpu = 0.0  # this host's guests: the run's own load
        for gid, tree in guests.items():
            cpu, rss, pids = tree.read(since)
            guest_pids[gid] = pids
            row[vocab.guest_key(gid, vocab.GUEST_CPU)] = cpu
            row[vocab.guest_key(gid, vocab.GUEST_RSS)] = rss
            if isinstance(tree, ProcessTree) and cpu == cpu:
                local_cpu += cpu
        for helper in helpers:
            cpu = helper.read(since)[0]
            local_cpu += cpu if cpu == cpu else 0.0
        self._host_others(row, local_cpu)
        for i in range(self._gpu_count):
            for key, value in self.nvml.sample(i).items():
                row[vocab.gpu_key(i, key)] = as_float(value)
            self.util_samples.setdefault(i, []).extend(self.nvml.util_samples(i))
            events = row[vocab.gpu_key(i, vocab.CLOCK_EVENTS)]
            if events == events:  # not NaN
                self._clock_events[i] = self._clock_events.get(i, 0) | int(events)
        for i in self._vgpu_hosts:
            row.update({vocab.gpu_key(i, k): v for k, v in self._vgpu_util.read(i).items()})
        if self._gpu_count and guests:
            self._per_guest_gpu(row, guest_pids)
        return row

    def _host_others(self, row: Row, run_cpu: float) -> None:
        """The CPU of processes that are not the run's (the host's busy time less the guests' and the runner's),
        and steal time: a busy host is said, not hidden (gpu_probe/hostload.py)."""
        if self._cpu_clock is None:
            self._cpu_clock = CpuClock()
            return
        busy, steal = self._cpu_clock.read()
        now, reading = time.monotonic(), self._own.read()
        own = 0.0
        if reading is not None and self._own_last and now > self._own_last[0]:
            own = 100.0 * (reading[0] - self._own_last[1]) / (now - self._own_last[0])
        self._own_last = (now, reading[0]) if reading is not None else None
        row[vocab.HOST_OTHER_CPU.key] = max(0.0, busy - run_cpu - own) if busy == busy else NAN
        row[vocab.HOST_STEAL.key] = steal

    def _per_guest_gpu(self, row: Row, guest_pids: dict[str, set[int]]) -> None:
        """GPU memory and SM % of each guest: NVML's per-process figures summed over its tree."""
        mem: dict[int, float] = {}
        util: dict[int, float] = {}
        for i in range(self._gpu_count):
            for pid, mib in self.nvml.process_memory(i).items():
                mem[pid] = mem.get(pid, 0.0) + mib
            for pid, pct in self.nvml.process_utilization(i).items():
                util[pid] = util.get(pid, 0.0) + pct
        if self.attribution_note or foreign_pid_namespace(set(mem) | set(util), guest_pids):
            self.attribution_note = self.attribution_note or FOREIGN_PIDS
            return  # never a silent 0 (or another process's figures) for a guest
        for gid, pids in guest_pids.items():
            row[vocab.guest_key(gid, vocab.GUEST_GPU_MEM)] = sum(mem.get(p, 0.0) for p in pids)
            row[vocab.guest_key(gid, vocab.GUEST_GPU_UTIL)] = sum(util.get(p, 0.0) for p in pids)

    def clock_events_seen(self) -> dict[str, list[str]]:
        """Every clock event reason any sample saw, per GPU, by name."""
        return {vocab.gpu_key(i): decode_clock_events(mask) for i, mask in sorted(self._clock_events.items())}

    @property
    def cpu_pct(self) -> float:
        """The sampler's own cost: CPU seconds per wall second, 100 = one core."""
        span = (self.t_end or time.time()) - self.t0
        return 100.0 * self.cpu_s / span if span > 0 else 0.0

    # -- aggregate --------------------------------------------------------------
    @property
    def achieved_rate_hz(self) -> float:
        if len(self.rows) < 2:
            return 0.0
        span = self.rows[-1]["t_s"] - self.rows[0]["t_s"]  # n samples span n-1 periods
        return (len(self.rows) - 1) / span if span > 0 else 0.0

    def columns(self) -> list[str]:
        return columns(self.rows)

    def ship(self, start: int, pick: Callable[[Row], Row]) -> Row:
        """What a node or a VM sends the runner: the rows from ``start`` on (epoch ``t`` and ``pick(row)``) and what
        this sampler knows of itself."""
        return {"rows": [{"t": self.t0 + r["t_s"], **pick(r)} for r in self.rows[start:]], "cpu_pct": self.cpu_pct,
                "rate_hz": self.achieved_rate_hz, "errors": self.errors, "gpu_status": self.gpu_status}

    def aggregate(self, prefix: str = "") -> dict[str, float]:
        """``<column>.mean|p95|max`` of the rows so far (see :func:`aggregate`)."""
        return aggregate(self.rows, prefix)

    def snapshot(self) -> "SampleSet":
        """What was sampled, as plain data (no thread, no NVML handle): for records and reports. Rows sampled on
        remote guests' nodes join the row nearest in time (within one period)."""
        with self._lock:
            remote = {g: src for g, src in [*self._guests.items(), *self._joined.items()]
                      if isinstance(src, RemoteUsage) and src.node}
        rows = list(self.rows)
        for src in remote.values():
            rows = merge_rows(rows, self.t0, src.rows, 1.0 / self.rate_hz)
        notes = [self.attribution_note] if self.attribution_note else []
        notes += [n for gid, src in remote.items() for n in node_notes(gid, src)]
        return SampleSet(rows=rows, t0=self.t0, rate_hz=self.rate_hz, achieved_hz=self.achieved_rate_hz,
                         errors=self.errors, cpu_pct=self.cpu_pct, clock_events=self.clock_events_seen(),
                         notes=notes, nodes={gid: dict(src.node) for gid, src in remote.items()},
                         util_samples={i: list(u) for i, u in self.util_samples.items()})


@dataclass
class SampleSet:
    """A finished sampling: the rows and what the sampler knew about itself."""

    rows: list[Row] = field(default_factory=list)
    t0: float = 0.0  # epoch seconds of the first sample period
    rate_hz: float = 0.0  # requested
    achieved_hz: float = 0.0
    errors: int = 0
    cpu_pct: float = 0.0  # the sampler's own cost, 100 = one core
    clock_events: dict[str, list[str]] = field(default_factory=dict)  # clock event reasons seen per GPU
    notes: list[str] = field(default_factory=list)  # what the figures do not hold, and why
    nodes: dict[str, JsonObject] = field(default_factory=dict)  # per remote guest: its node sampler's figures
    util_samples: dict[int, list[tuple[float, float]]] = field(default_factory=dict)  # GPU -> driver's (epoch s, %)

    def node_metrics(self, guest_id: str) -> dict[str, float]:
        """A remote guest's node sampler: its rate and cost there, like the runner's own."""
        node = self.nodes.get(guest_id)
        if not node:
            return {}
        return {vocab.SAMPLE_RATE.key: float(node.get("rate_hz", NAN)), vocab.SAMPLER_CPU.key: float(node.get(
            "cpu_pct", NAN))}

    def aggregate(self, prefix: str = "") -> dict[str, float]:
        return aggregate(self.rows, prefix)

    def host_metrics(self) -> dict[str, float]:
        """Host and GPU aggregates, the sampler's rate and cost, and GPU energy where power was readable."""
        out = {k: v for k, v in self.aggregate().items() if k.startswith(("host_", "gpu"))}
        out[vocab.SAMPLE_RATE.key] = self.achieved_hz
        out[vocab.SAMPLER_CPU.key] = self.cpu_pct
        energy = energy_J(self.rows)
        if not math.isnan(energy):
            out[vocab.ENERGY.key] = energy
        return out


def columns(rows: list[Row]) -> list[str]:
    seen: dict[str, None] = {}
    for row in rows:
        seen.update(dict.fromkeys(row))
    return list(seen)


def aggregate(rows: list[Row], prefix: str = "") -> dict[str, float]:
    """``<column>.mean|p95|max`` for every column that starts with ``prefix``.

    The prefix is stripped, so ``aggregate(rows, "g0.")`` gives ``cpu_pct.mean``.
    """
    out: dict[str, float] = {}
    for col in columns(rows):
        if col == "t_s" or not col.startswith(prefix):
            continue
        if col.endswith(tuple(c.key for c in vocab.COUNTERS)):
            continue  # a bitmask or a running total has no mean
        s = summarize(as_float(r.get(col, NA)) for r in rows)
        if s.n == 0:
            continue
        name = col[len(prefix):]
        out.update({f"{name}.{agg}": getattr(s, agg) for agg in AGGREGATES})
    return out


def energy_J(rows: list[Row]) -> float:
    """Every GPU's energy over the samples: NVML's energy counter (last - first) where it counted, else the
    trapezoid integral of its board power (NaN without either)."""
    cols = sorted({k for r in rows for k in r if k.startswith("gpu") and k.endswith(vocab.POWER.key)})
    total, seen = 0.0, False
    for col in cols:
        counted = [r.get(col.replace(vocab.POWER.key, vocab.ENERGY_COUNTER.key)) for r in rows]
        counted = [c for c in counted if isinstance(c, (int, float)) and not math.isnan(c)]
        if len(counted) >= 2 and counted[-1] > counted[0]:
            total, seen = total + (counted[-1] - counted[0]) / 1000.0, True
            continue
        pts = [(r["t_s"], r[col]) for r in rows if isinstance(r.get(col), (int, float)) and not math.isnan(r[col])]
        for (t0, p0), (t1, p1) in zip(pts, pts[1:], strict=False):
            total += (t1 - t0) * (p0 + p1) / 2
            seen = True
    return total if seen else math.nan
