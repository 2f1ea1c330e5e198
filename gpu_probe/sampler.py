"""Background sampling of host, guest and GPU load (collect / aggregate).

A :class:`Sampler` is a context manager: a daemon thread takes one row of
readings per period until the block exits, whatever exception ends it. It
only measures; writing the rows anywhere (MLflow, CSV) is the caller's job,
so a slow tracking server can never stall or skew sampling.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import psutil

from gpu_probe import vocab
from gpu_probe.nvml import NA, Nvml, as_float
from gpu_probe.stats import summarize

AGGREGATES = ("mean", "p95", "max")


class _ProcessTree:
    """CPU % and RSS of a guest's root process and all its descendants.

    psutil's cpu_percent() measures since the previous call on the *same*
    Process object, so objects are cached per (pid, create_time).
    """

    def __init__(self, pid: int) -> None:
        self.root = psutil.Process(pid)
        self._cache: dict[tuple[int, float], psutil.Process] = {}

    def processes(self) -> list[psutil.Process]:
        try:
            procs = [self.root, *self.root.children(recursive=True)]
        except psutil.Error:
            return []
        live = []
        for p in procs:
            try:
                key = (p.pid, p.create_time())
            except psutil.Error:
                continue
            live.append(self._cache.setdefault(key, p))
        return live

    def read(self) -> tuple[float, float, set[int]]:
        cpu = rss = 0.0
        pids = set()
        for p in self.processes():
            try:
                with p.oneshot():
                    cpu += p.cpu_percent(None)
                    rss += p.memory_info().rss
                pids.add(p.pid)
            except psutil.Error:  # exited between listing and reading
                continue
        return cpu, rss / vocab.MiB, pids


class Sampler:
    """Samples at ``rate_hz`` on a background thread; rows land in ``self.rows``."""

    def __init__(self, rate_hz: float = 10.0, nvml: Nvml | None = None) -> None:
        if rate_hz <= 0:
            raise ValueError(f"sampler rate must be > 0 Hz, got {rate_hz}")
        self.rate_hz = rate_hz
        self.nvml = nvml if nvml is not None else Nvml()
        self.rows: list[dict[str, Any]] = []
        self.errors = 0
        self.t0 = 0.0
        self.t_end = 0.0
        self._guests: dict[str, _ProcessTree] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._gpu_count = 0

    @property
    def gpu_status(self) -> str:
        return f"{self._gpu_count} GPU(s)" if self._gpu_count else (self.nvml.reason or vocab.NO_GPU)

    def watch(self, guest_id: str, pid: int) -> None:
        """Follow a guest's process tree from now on (thread-safe)."""
        try:
            tree = _ProcessTree(pid)
        except psutil.Error:
            return
        with self._lock:
            self._guests[guest_id] = tree

    # -- lifecycle --------------------------------------------------------------
    def __enter__(self) -> "Sampler":
        if not self.nvml.available:
            self.nvml.open()
        self._gpu_count = self.nvml.device_count()
        psutil.cpu_percent(None)  # prime the host counter
        self.t0 = time.time()
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
            try:
                self.rows.append(self.collect())
            except Exception:  # one bad reading must not end sampling
                self.errors += 1
            tick += 1
            # Schedule against the start time so the rate does not drift with collect() cost.
            delay = self.t0 + tick * period - time.time()
            if delay < 0:
                tick = int((time.time() - self.t0) / period) + 1
                delay = self.t0 + tick * period - time.time()
            self._stop.wait(max(delay, 0.0))

    # -- collect ----------------------------------------------------------------
    def collect(self) -> dict[str, Any]:
        """One row: host, each watched guest, each GPU."""
        row: dict[str, Any] = {"t_s": time.time() - self.t0}
        row[vocab.HOST_CPU.key] = psutil.cpu_percent(None)
        row[vocab.HOST_MEM_USED.key] = psutil.virtual_memory().used / vocab.MiB
        with self._lock:
            guests = dict(self._guests)
        guest_pids: dict[str, set[int]] = {}
        for gid, tree in guests.items():
            cpu, rss, pids = tree.read()
            guest_pids[gid] = pids
            row[vocab.guest_key(gid, vocab.GUEST_CPU)] = cpu if pids else float("nan")
            row[vocab.guest_key(gid, vocab.GUEST_RSS)] = rss if pids else float("nan")
        for i in range(self._gpu_count):
            for key, value in self.nvml.sample(i).items():
                row[f"gpu{i}.{key}"] = as_float(value)
        if self._gpu_count and guests:
            per_pid = {}
            for i in range(self._gpu_count):
                per_pid.update(self.nvml.process_memory(i))
            for gid, pids in guest_pids.items():
                row[vocab.guest_key(gid, vocab.GUEST_GPU_MEM)] = sum(per_pid.get(p, 0.0) for p in pids)
        return row

    # -- aggregate --------------------------------------------------------------
    @property
    def achieved_rate_hz(self) -> float:
        if len(self.rows) < 2:
            return 0.0
        span = self.rows[-1]["t_s"] - self.rows[0]["t_s"]  # n samples span n-1 periods
        return (len(self.rows) - 1) / span if span > 0 else 0.0

    def columns(self) -> list[str]:
        seen: dict[str, None] = {}
        for row in self.rows:
            seen.update(dict.fromkeys(row))
        return list(seen)

    def aggregate(self, prefix: str = "") -> dict[str, float]:
        """``<column>.mean|p95|max`` for every column that starts with ``prefix``.

        The prefix is stripped, so ``aggregate("g0.")`` gives ``cpu_pct.mean``.
        """
        out: dict[str, float] = {}
        for col in self.columns():
            if col == "t_s" or not col.startswith(prefix):
                continue
            if col.endswith(vocab.CLOCK_EVENTS.key):
                continue  # a bitmask has no mean
            s = summarize(as_float(r.get(col, NA)) for r in self.rows)
            if s.n == 0:
                continue
            name = col[len(prefix):]
            out.update({f"{name}.{agg}": getattr(s, agg) for agg in AGGREGATES})
        return out
