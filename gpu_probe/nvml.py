"""NVML access through one query wrapper (the nvitop ``api/`` idea).

Every NVML call goes through :meth:`Nvml.query`, which turns any NVML error
(NOT_SUPPORTED, GPU_IS_LOST, NO_PERMISSION, a binding too old to know the
function...) into the :data:`NA` sentinel, so one unreadable field never
loses a sample. ``pynvml`` is the module shipped by the ``nvidia-ml-py``
package; it is imported lazily so a machine without it still runs.
"""

from __future__ import annotations

import ctypes
import math
from collections.abc import Callable
from typing import TypeVar

from gpu_probe import vocab
from gpu_probe.shapes import JsonObject, NvmlValue

T = TypeVar("T")


class _NotAvailable:
    """Missing-value sentinel: falsy, prints as N/A, becomes NaN in tables."""

    _instance: "_NotAvailable | None" = None

    def __new__(cls) -> "_NotAvailable":
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __bool__(self) -> bool:
        return False

    def __repr__(self) -> str:
        return "N/A"

    def __float__(self) -> float:
        return float("nan")


NA: NvmlValue = _NotAvailable()

# NVML clock event reason bits (nvmlClocksEventReason*, formerly "throttle reasons").
# Stable across driver versions; tests check them against the installed binding.
CLOCK_EVENT_REASONS = {
    0x1: "gpu_idle",
    0x2: "applications_clocks_setting",
    0x4: "sw_power_cap",
    0x8: "hw_slowdown",
    0x10: "sync_boost",
    0x20: "sw_thermal_slowdown",
    0x40: "hw_thermal_slowdown",
    0x80: "hw_power_brake_slowdown",
    0x100: "display_clock_setting",
}


MPS_PROCESSES = "nvmlDeviceGetMPSComputeRunningProcesses"
PROCESS_LISTS = ("nvmlDeviceGetComputeRunningProcesses", "nvmlDeviceGetGraphicsRunningProcesses", MPS_PROCESSES)


def decode_clock_events(mask: NvmlValue) -> list[str]:
    """Bitmask -> reason names, e.g. 0x5 -> ['gpu_idle', 'sw_power_cap']; NA -> []."""
    if mask is NA or mask is None or mask != mask:  # NA / None / NaN
        return []
    mask = int(mask)
    names = [name for bit, name in CLOCK_EVENT_REASONS.items() if mask & bit]
    unknown = mask & ~sum(CLOCK_EVENT_REASONS)
    return names + ([f"unknown_{unknown:#x}"] if unknown else [])


def as_float(value: NvmlValue) -> float:
    return float("nan") if value is NA or value is None else float(value)


class Nvml:
    """A session with the NVML library (or a recorded stand-in with its API)."""

    def __init__(self, lib: NvmlValue | None = None) -> None:
        self._lib = lib
        self.available = False
        self.reason = "NVML not initialised"
        self._last_ts: dict[int, int] = {}  # per-device timestamp of the newest utilisation sample
        self._proc_util: dict[int, dict[int, tuple[int, float]]] = {}  # device -> pid -> (ts, SM %)
        self._util_ts: dict[int, int] = {}  # per-device timestamp of the newest driver utilisation sample seen

    # -- session --------------------------------------------------------------
    def open(self) -> "Nvml":
        if self._lib is None:
            try:
                import pynvml  # from nvidia-ml-py, never the deprecated `pynvml` package
            except ImportError:
                self.reason = f"{vocab.NO_GPU}: nvidia-ml-py not installed"
                return self
            self._lib = pynvml
        try:
            self._lib.nvmlInit()
        except Exception as exc:  # NVMLError_LibraryNotFound / DriverNotLoaded on GPU-less hosts
            self.reason = f"{vocab.NO_GPU}: NVML unavailable ({exc})"
            return self
        self.available = True
        self.reason = ""
        return self

    def close(self) -> None:
        if self.available:
            self.query(lambda nv: nv.nvmlShutdown())
            self.available = False

    def __enter__(self) -> "Nvml":
        return self.open()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the wrapper ----------------------------------------------------------
    def query(self, call: Callable[[NvmlValue], T]) -> T | NvmlValue:
        """Run ``call(pynvml)``; any NVML error or missing function gives NA."""
        if not self.available:
            return NA
        try:
            return call(self._lib)
        except (self._lib.NVMLError, AttributeError, TypeError, ValueError, ctypes.ArgumentError):
            return NA

    # -- device queries -------------------------------------------------------
    def device_count(self) -> int:
        count = self.query(lambda nv: nv.nvmlDeviceGetCount())
        return 0 if count is NA else int(count)

    def handle(self, index: int) -> NvmlValue:
        return self.query(lambda nv: nv.nvmlDeviceGetHandleByIndex(index))

    def device_info(self, index: int) -> JsonObject:
        h = self.handle(index)
        mem = self.query(lambda nv: nv.nvmlDeviceGetMemoryInfo(h))
        cc = self.query(lambda nv: nv.nvmlDeviceGetCudaComputeCapability(h))
        return {
            "index": index,
            "name": _text(self.query(lambda nv: nv.nvmlDeviceGetName(h))),
            "compute_capability": NA if cc is NA else f"{cc[0]}.{cc[1]}",
            "uuid": _text(self.query(lambda nv: nv.nvmlDeviceGetUUID(h))),
            "pci_bus_id": _text(self.query(lambda nv: nv.nvmlDeviceGetPciInfo(h).busId)),
            vocab.GPU_MEM_TOTAL.key: NA if mem is NA else mem.total / vocab.MiB,
        }

    def pci_bus_id(self, uuid: str) -> str | None:
        """The PCI address of the GPU (or MIG device's parent) with this UUID, None when NVML cannot say."""
        h = self.query(lambda nv: nv.nvmlDeviceGetHandleByUUID(uuid))
        bus = NA if h is NA else self.query(lambda nv: nv.nvmlDeviceGetPciInfo(h).busId)
        return None if bus is NA else _text(bus)

    def system_info(self) -> JsonObject:
        cuda = self.query(lambda nv: nv.nvmlSystemGetCudaDriverVersion_v2())
        if cuda is NA:
            cuda = self.query(lambda nv: nv.nvmlSystemGetCudaDriverVersion())
        return {
            "driver_version": _text(self.query(lambda nv: nv.nvmlSystemGetDriverVersion())),
            "cuda_driver_version": NA if cuda is NA else f"{cuda // 1000}.{cuda % 1000 // 10}",
            "nvml_version": _text(self.query(lambda nv: nv.nvmlSystemGetNVMLVersion())),
        }

    def sample(self, index: int) -> JsonObject:
        """One reading of the per-GPU metrics in :data:`vocab.GPU_METRICS`."""
        h = self.handle(index)
        q = self.query
        util = q(lambda nv: nv.nvmlDeviceGetUtilizationRates(h))
        mem = q(lambda nv: nv.nvmlDeviceGetMemoryInfo(h))
        power_mw = q(lambda nv: nv.nvmlDeviceGetPowerUsage(h))
        events = q(lambda nv: nv.nvmlDeviceGetCurrentClocksEventReasons(h))
        if events is NA:  # drivers before the rename only know "throttle reasons"
            events = q(lambda nv: nv.nvmlDeviceGetCurrentClocksThrottleReasons(h))
        return {
            vocab.GPU_UTIL.key: NA if util is NA else util.gpu,
            vocab.GPU_MEM_UTIL.key: NA if util is NA else util.memory,
            vocab.GPU_MEM_USED.key: NA if mem is NA else mem.used / vocab.MiB,
            vocab.POWER.key: NA if power_mw is NA else power_mw / 1000.0,
            vocab.SM_CLOCK.key: q(lambda nv: nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_SM)),
            vocab.MEM_CLOCK.key: q(lambda nv: nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_MEM)),
            vocab.TEMPERATURE.key: q(lambda nv: nv.nvmlDeviceGetTemperature(h, nv.NVML_TEMPERATURE_GPU)),
            vocab.CLOCK_EVENTS.key: events,
            vocab.ENERGY_COUNTER.key: q(lambda nv: nv.nvmlDeviceGetTotalEnergyConsumption(h)),
        }

    def process_memory(self, index: int) -> dict[int, float]:
        """pid -> GPU memory (MiB) of the compute, graphics and MPS client processes on a GPU; NaN for a process
        NVML lists without a figure (``usedGpuMemory`` None: not available to this user, or under MIG), never a
        silent 0. MPS clients are listed only by their own call (the compute list holds the MPS server)."""
        h = self.handle(index)
        known: dict[int, float] = {}
        listed: set[int] = set()
        for getter in PROCESS_LISTS:
            procs = self.query(lambda nv, g=getter: getattr(nv, g)(h))
            mps = getter == MPS_PROCESSES
            for p in [] if procs is NA else procs:
                pid, used = int(p.pid), getattr(p, "usedGpuMemory", None)
                if mps and pid in listed:
                    continue  # already counted from the compute list
                listed.add(pid)
                if used is not None:
                    known[pid] = known.get(pid, 0.0) + used / vocab.MiB
        return {pid: known.get(pid, math.nan) for pid in listed}

    def process_lists(self, index: int) -> dict[str, dict[int, float]]:
        """Each process list NVML keeps of a GPU, apart ("compute", "graphics", "mps": its MPS clients), as pid ->
        MiB (NaN: listed without a figure); a list this driver's binding lacks is absent."""
        h = self.handle(index)
        out: dict[str, dict[int, float]] = {}
        for name, getter in zip(("compute", "graphics", "mps"), PROCESS_LISTS, strict=True):
            procs = self.query(lambda nv, g=getter: getattr(nv, g)(h))
            if procs is not NA:
                out[name] = {int(p.pid): (math.nan if getattr(p, "usedGpuMemory", None) is None
                                          else p.usedGpuMemory / vocab.MiB) for p in procs}
        return out

    def process_utilization(self, index: int) -> dict[int, float]:
        """pid -> SM utilisation % from NVML's timestamped per-process samples.

        NVML returns only samples newer than the timestamp passed in and
        refreshes them slower than we may poll, so each pid's newest sample is
        held until it is more than a second older than the newest on the GPU.
        """
        h = self.handle(index)
        since = self._last_ts.get(index, 0)
        samples = self.query(lambda nv: nv.nvmlDeviceGetProcessesUtilizationInfo(h, since))
        if samples is NA:  # drivers before R550 only have the older call
            samples = self.query(lambda nv: nv.nvmlDeviceGetProcessUtilization(h, since))
        held = self._proc_util.setdefault(index, {})
        for s in [] if samples is NA else samples:
            ts = int(s.timeStamp)  # microseconds
            if ts >= held.get(int(s.pid), (-1, 0.0))[0]:
                held[int(s.pid)] = (ts, float(s.smUtil))
            self._last_ts[index] = max(self._last_ts.get(index, 0), ts)
        newest = self._last_ts.get(index, 0)
        return {pid: util for pid, (ts, util) in held.items() if ts >= newest - 1_000_000}

    def util_samples(self, index: int) -> list[tuple[float, float]]:
        """The driver's own GPU utilisation samples newer than the last call's, as (epoch s, %), oldest first: each
        the percent of its sample period (since the sample before; 1/6 s to 1 s by product) in which a kernel ran.
        ``nvmlDeviceGetUtilizationRates`` answers the newest finished period, so a reading taken just after a timed
        window opens still holds the idle time before it (0 % for 0.2 s into each 2 s window of an H200's b2: a
        10 % bias); these samples' own timestamps let a window take only the periods inside it.
        [] where NVML keeps none (older drivers, traces that did not record them)."""
        h = self.handle(index)
        since = self._util_ts.get(index, 0)
        got = self.query(lambda nv: nv.nvmlDeviceGetSamples(h, nv.NVML_GPU_UTILIZATION_SAMPLES, since))
        if got is NA:
            return []
        fresh = sorted((int(s.timeStamp), float(s.sampleValue.uiVal)) for s in got[1] if int(s.timeStamp) > since)
        if fresh:
            self._util_ts[index] = fresh[-1][0]
        return [(ts / 1e6, pct) for ts, pct in fresh]  # NVML stamps them in microseconds of the epoch


def _text(value: NvmlValue) -> NvmlValue:
    return value.decode() if isinstance(value, bytes) else value
