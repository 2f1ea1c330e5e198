"""The one vocabulary of metric keys and units.

Decided once: memory is in MiB (2**20 bytes), power in W, clocks in MHz,
utilisation and CPU load in percent, temperature in degrees C, times in s.
Every metric name the suite writes (sample columns, MLflow metrics, result
JSON) is built from the constants here, so a unit lives in the key itself.
"""

from __future__ import annotations

from dataclasses import dataclass

MiB = 1024 * 1024


@dataclass(frozen=True)
class Metric:
    key: str
    unit: str
    doc: str


# --- workload results (reported by guests) ---------------------------------
TRAIN_TIME = Metric("train_time_s", "s", "first to last training step, no start-up or data load")
WALL_TIME = Metric("wall_time_s", "s", "guest process start to result")
SETUP_TIME = Metric("setup_time_s", "s", "guest start to barrier: imports, data load, model build")
IMAGES_PER_SEC = Metric("images_per_sec", "images/s", "training throughput after warm-up steps")
TEST_ACCURACY = Metric("test_accuracy", "fraction", "top-1 accuracy on the test split")
IMAGES = Metric("images", "images", "training images processed")
STEPS = Metric("steps", "steps", "optimizer steps taken")
# graphics replay: per run, and scoped per viewset (``mechanical.fps``) and test (``mechanical.shaded.fps``)
FRAMES = Metric("frames", "frames", "frames timed (after each test's warm-up frames)")
FPS = Metric("fps", "frames/s", "timed frames over their summed frame times")
FRAME_TIME = Metric("frame_time_ms", "ms", "wall time of one frame: draw calls to glFinish; .p50/.p95/.p99")
STUTTER = Metric("stutter_pct", "%", "frames over twice the median frame time, % of the frames timed")
CPU_FRAME_TIME = Metric("cpu_frame_time_ms", "ms", "apitrace: eglretrace --pframes CPU Duration per frame")
GPU_FRAME_TIME = Metric("gpu_frame_time_ms", "ms", "GL timer query per frame, only where the driver's are sane")
RUN_TIME = Metric("run_time_s", "s", "summed wall time of every replayed frame, warm-up included")
COMPOSITE = Metric("composite_score", "frames/s", "weighted geometric mean of per-test fps (SPECviewperf-style)")
TRIANGLES_PER_SEC = Metric("triangles_per_sec", "triangles/s", "triangles submitted per second of frame time")
PIXELS_OK = Metric("pixels_ok", "bool", "1 when every checked frame matched its reference, else 0")

# --- concurrency (a scenario run's guests beside each other) ---------------
OVERLAP = Metric("overlap_pct", "%", "guests measured beside each other: the worst guest's share of its timed window "
                 "with a guest of another workload at work (overlap_pct.<a>.<b>: each pair's, the smaller share)")

# --- sampler columns --------------------------------------------------------
HOST_CPU = Metric("host_cpu_pct", "%", "whole-host CPU load, 100 = all cores busy")
HOST_OTHER_CPU = Metric("host_other_cpu_pct", "%", "CPU of processes that are not the run's (host busy less the "
                        "runner and its guests), 100 = one core")
HOST_STEAL = Metric("host_steal_pct", "%", "CPU the hypervisor stole from this VM, 100 = one core")
HOST_MEM_USED = Metric("host_mem_used_MiB", "MiB", "host memory in use")
GUEST_CPU = Metric("cpu_pct", "%", "guest process tree CPU, 100 = one core busy")
GUEST_RSS = Metric("rss_MiB", "MiB", "guest process tree resident memory")
GUEST_GPU_MEM = Metric("gpu_mem_MiB", "MiB", "GPU memory held by the guest's processes")
GUEST_GPU_MEM_SELF = Metric("gpu_mem_self_MiB", "MiB", "GPU memory by the guest's own count: its allocator's peak "
                            "+ its measured CUDA context (self-reported; where NVML cannot attribute memory)")
GUEST_GPU_MEM_NEED = Metric("gpu_mem_need_MiB", "MiB", "GPU memory the guest needs: the peak its tensors held "
                            "(allocated, not what the allocator cached under a larger cap) + its measured CUDA "
                            "context: what a smaller framebuffer must hold")
GUEST_GPU_MEM_STATED = Metric("gpu_mem_stated_MiB", "MiB", "GPU memory a CAD guest's replay states it needs: its "
                              "largest viewset's buffers, textures and render targets as uploaded (the renderer's "
                              "count, without the driver's own): what a profile's framebuffer must at least hold, "
                              "where no GPU measured it")
GUEST_GPU_UTIL = Metric("gpu_util_pct", "%", "SM utilisation of the guest's processes (NVML per-process samples)")
GPU_UTIL = Metric("util_pct", "%", "GPU busy time over the driver's sample period")
GPU_MEM_UTIL = Metric("mem_util_pct", "%", "memory controller busy time")
GPU_MEM_USED = Metric("mem_used_MiB", "MiB", "GPU framebuffer in use")
GPU_MEM_TOTAL = Metric("mem_total_MiB", "MiB", "GPU framebuffer size")
POWER = Metric("power_W", "W", "board power draw")
SM_CLOCK = Metric("sm_clock_MHz", "MHz", "SM clock")
MEM_CLOCK = Metric("mem_clock_MHz", "MHz", "memory clock")
TEMPERATURE = Metric("temp_C", "C", "GPU core temperature")
CLOCK_EVENTS = Metric("clock_event_reasons", "bitmask", "NVML clock event reasons (was: throttle reasons)")
ENERGY_COUNTER = Metric("energy_counter_mJ", "mJ", "NVML total energy since the driver loaded (Volta and newer)")

GPU_METRICS = (GPU_UTIL, GPU_MEM_UTIL, GPU_MEM_USED, POWER, SM_CLOCK, MEM_CLOCK, TEMPERATURE, CLOCK_EVENTS,
               ENERGY_COUNTER)
COUNTERS = (CLOCK_EVENTS, ENERGY_COUNTER)  # columns with no mean: a bitmask, a running total

# --- scenario-level ---------------------------------------------------------
MAKESPAN = Metric("makespan_s", "s", "barrier release to last guest finished")
SAMPLE_RATE = Metric("sampler_rate_hz", "Hz", "achieved sampling rate")
ENERGY = Metric("energy_J", "J", "GPU energy over the run: NVML's energy counter where it counts, else the "
                "trapezoid integral of power_W samples")
SAMPLER_CPU = Metric("sampler_cpu_pct", "%", "CPU time of the sampler thread, 100 = one core")

NO_GPU = "no GPU"

# A training guest's GPU figures over its timed windows only (each repeat's, after its warm-up steps), beside the
# whole-run ones: ``timed.gpu0.util_pct.mean``. The whole run holds imports, data synthesis, compile and the
# evaluations, which a figure about training must leave out.
TIMED = "timed."
TIMED_SAMPLES = "timed.samples"  # how many sampler rows fell in the windows
PERIODS = ".periods"  # after ``timed.gpuN.util_pct``: how many of the driver's utilisation periods it averages


def gpu_key(index: int, metric: Metric | str | None = None) -> str:
    """Column/metric name for one GPU, e.g. ``gpu0.util_pct``; ``gpu0`` alone without a metric."""
    if metric is None:
        return f"gpu{index}"
    return f"gpu{index}.{metric.key if isinstance(metric, Metric) else metric}"


def is_gpu_key(key: str, metric: Metric, stat: str | None = None) -> bool:
    """Whether ``key`` is ``metric`` (with ``.stat``) of some GPU: ``gpu3.util_pct.mean``."""
    head, _, rest = key.partition(".")
    return head[:3] == "gpu" and head[3:].isdigit() and rest == (f"{metric.key}.{stat}" if stat else metric.key)


def scoped_key(scope: str, metric: Metric, stat: str | None = None) -> str:
    """Per-viewset or per-test metric, e.g. ``mechanical.frame_time_ms.p95``."""
    key = f"{scope}.{metric.key}" if scope else metric.key
    return f"{key}.{stat}" if stat else key


def guest_key(guest_id: str, metric: Metric) -> str:
    """Column name for one guest, e.g. ``g1.cpu_pct``."""
    return f"{guest_id}.{metric.key}"
