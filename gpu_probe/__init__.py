"""GPU and CPU observation, a library of its own (it imports nothing of ``suites``): one NVML query wrapper with one
missing-value sentinel (:class:`Nvml`, :data:`NA`), the host and device inventory, the background sampler and its
sample set, recorded NVML traces for hosts without the hardware, the statistics every figure goes through, the
datasheet (the one GPU table) and the metric vocabulary (keys and units: MiB, W, %).

Its public surface is :data:`__all__`; the modules behind it (``nvml``, ``inventory``, ``sampler``, ``stats``,
``trace``, ``datasheet``, ``vocab``, ``shapes``, ``hostload``, ``remote``, ``procfs``, ``probe``,
``virtualization``) may change.
``python -m gpu_probe`` samples from the command line.
"""

from gpu_probe import probe, procfs, virtualization, vocab
from gpu_probe.datasheet import LARGEST_MiB, Sheet, datasheet, memory_MiB
from gpu_probe.hostload import HostLoad, other_load
from gpu_probe.inventory import Inventory, git_sha
from gpu_probe.nvml import CLOCK_EVENT_REASONS, NA, Nvml, decode_clock_events
from gpu_probe.remote import RemoteUsage, merge_rows
from gpu_probe.sampler import ProcessTree, Sampler, SampleSet, aggregate, energy_J, foreign_pid_namespace
from gpu_probe.shapes import Json, Record, Row
from gpu_probe.stats import (
    FASTER,
    NO_SPREAD,
    SLOWER,
    WITHIN_NOISE,
    ClockOffset,
    Interval,
    aggregate_repeats,
    clock_offset,
    confidence_interval,
    inconclusive,
    judge_limit,
    paired_ratios,
    percentile,
    ratio_interval,
    summarize,
    t_quantile,
    verdict,
)
from gpu_probe.trace import TRACE_ENV, RecordingNvml, ReplayNvml, TraceError, lib_from_env

__all__ = [
    # NVML: one query wrapper, one missing value
    "Nvml", "NA", "CLOCK_EVENT_REASONS", "decode_clock_events",
    # the host and its devices
    "Inventory", "git_sha", "HostLoad", "other_load", "Sheet", "datasheet", "memory_MiB", "LARGEST_MiB",
    # sampling
    "Sampler", "SampleSet", "ProcessTree", "aggregate", "energy_J", "foreign_pid_namespace", "RemoteUsage",
    "merge_rows",
    # recorded NVML for hosts without the hardware
    "RecordingNvml", "ReplayNvml", "TraceError", "TRACE_ENV", "lib_from_env",
    # statistics
    "Interval", "ClockOffset", "summarize", "percentile", "confidence_interval", "ratio_interval", "paired_ratios",
    "verdict", "inconclusive", "judge_limit", "aggregate_repeats", "clock_offset", "t_quantile", "NO_SPREAD",
    "FASTER", "SLOWER", "WITHIN_NOISE",
    # the plain records passed around
    "Json", "Record", "Row",
    # modules used whole
    "vocab", "probe", "procfs", "virtualization",
]
