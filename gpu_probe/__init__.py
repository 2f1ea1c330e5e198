"""GPU and CPU observation, a library of its own (it imports nothing of ``suites``): one NVML query wrapper with one
missing-value sentinel (:class:`Nvml`, :data:`NA`), the host and device inventory, the background sampler and its
sample set, recorded NVML traces for hosts without the hardware, the statistics every figure goes through, the
datasheet (the one GPU table) and the metric vocabulary (keys and units: MiB, W, %).

Its public surface is :data:`__all__`; the modules behind it (``nvml``, ``inventory``, ``sampler``, ``stats``,
``trace``, ``datasheet``, ``vocab``, ``shapes``, ``hostload``, ``remote``, ``procfs``, ``probe``,
``virtualization``, ``windows``) may change. ``python -m gpu_probe`` samples from the command line.

A name is imported from its module when it is first used (PEP 562): every guest and command imports some of
gpu_probe, and importing all of it up front added ~0.15 s to each of them.
"""

from __future__ import annotations

import importlib

# public name -> the module that defines it ("" : the name is a module of its own, used whole)
_WHERE = {
    # NVML: one query wrapper, one missing value
    "Nvml": "nvml", "NA": "nvml", "CLOCK_EVENT_REASONS": "nvml", "decode_clock_events": "nvml",
    # the host and its devices
    "Inventory": "inventory", "git_sha": "inventory", "HostLoad": "hostload", "other_load": "hostload",
    "Sheet": "datasheet", "memory_MiB": "datasheet", "LARGEST_MiB": "datasheet",
    # sampling
    "Sampler": "sampler", "SampleSet": "sampler", "ProcessTree": "sampler", "aggregate": "sampler",
    "energy_J": "sampler", "timed_gpu": "windows", "foreign_pid_namespace": "procfs", "RemoteUsage": "remote",
    "merge_rows": "remote",
    # recorded NVML for hosts without the hardware
    "RecordingNvml": "trace", "ReplayNvml": "trace", "TraceError": "trace", "TRACE_ENV": "trace",
    "lib_from_env": "trace",
    # statistics
    **dict.fromkeys(("Interval", "ClockOffset", "summarize", "percentile", "confidence_interval", "ratio_interval",
                     "paired_ratios", "verdict", "inconclusive", "judge_limit", "goal", "aggregate_repeats",
                     "clock_offset", "t_quantile", "NO_SPREAD", "FASTER", "SLOWER", "WITHIN_NOISE"), "stats"),
    # the plain JSON passed around
    "Json": "shapes", "JsonObject": "shapes", "Row": "shapes",
    # modules used whole
    # (datasheet too: its function shares the module's name, and importing the module rebinds that name here)
    "vocab": "", "probe": "", "procfs": "", "virtualization": "", "datasheet": "",
}
__all__ = list(_WHERE)


def __getattr__(name: str) -> object:
    where = _WHERE.get(name)
    if where is None:
        raise AttributeError(f"module 'gpu_probe' has no attribute {name!r}")
    value = importlib.import_module(f"gpu_probe.{name}") if where == "" else \
        getattr(importlib.import_module(f"gpu_probe.{where}"), name)
    globals()[name] = value  # found once
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
