"""What one phase of a mixed or consolidation scenario measured, reduced to the figures its verdicts need: from a
run's outcome (:func:`suites.run.mixed.numbers`) or read back from MLflow (suites/record/reader.py) alike."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from gpu_probe import vocab
from gpu_probe.stats import summarize
from suites.run.outcome import missed_target
from suites.workloads import base, registry

__all__ = ["PhaseNumbers", "gpu_mem_MiB", "jitter_pct", "category_of"]


def category_of(workload: str) -> str:
    """ML or CAD, as the workload's plugin declares (unknown names count as ML, as they did before categories)."""
    plugin = registry().get(workload)
    return plugin.category if plugin is not None else base.ML


@dataclass
class PhaseNumbers:
    """What one phase measured, reduced to what the mixed scenarios need (NaN where not measured)."""

    makespan_s: float = math.nan
    host_cpu_pct: float = math.nan  # 100 = all host cores
    gpu_util_pct: float = math.nan
    energy_J: float = math.nan  # GPU board energy over the phase, where power is readable
    cad_guests: int = 0
    cad_run_time_s: float = math.nan  # mean over CAD guests
    # seconds per timed frame, mean over CAD guests: what a CAD slowdown is read from (a replay sized by time,
    # workload.min_replay_s, renders more passes where it is faster: its run time is its window, not its work)
    cad_frame_s: float = math.nan
    cad_p95_frame_ms: list[float] = field(default_factory=list)  # one per CAD guest
    cad_p50_frame_ms: list[float] = field(default_factory=list)  # one per CAD guest: its median frame rate's
    cad_frames: float = 0.0
    ml_images_per_sec: float = math.nan  # the slowest ML guest's steady rate: what its slowdown is read from
    ml_images: float = 0.0
    overlap_pct: float = math.nan  # the worst guest's window share beside the other workload (vocab.OVERLAP)
    failed: int = 0
    host_other_cpu_pct: float = math.nan  # other processes' CPU, % of one core: the worse of before and during
    ml_rate_blank: int = 0  # ML guests that finished without a rate (a window too short): no slowdown from them
    ml_missed: str = ""  # why an ML guest missed its accuracy target ('' where none did)
    # the tails a mean hides: per CAD guest its p99 frame time and stutter, the ML guests' worst rate jitter
    cad_p99_frame_ms: list[float] = field(default_factory=list)
    cad_stutter_pct: list[float] = field(default_factory=list)
    ml_jitter_pct: float = math.nan  # the windows' rates' median absolute deviation, % of their median
    failed_guests: list[str] = field(default_factory=list)  # which guests failed (their ids, where known)
    # the most GPU memory one guest of each category held (its own count or NVML's, context included): NaN without a GPU
    cad_gpu_mem_MiB: float = math.nan
    ml_gpu_mem_MiB: float = math.nan
    cad_stated_MiB: float = math.nan  # what a CAD guest's viewsets state they need (measured or not)

    @classmethod
    def from_guests(cls, phase: dict[str, float], guests: list[tuple[str, bool, dict[str, float]]],
                    ids: list[str] | None = None) -> "PhaseNumbers":
        """``phase``: the scenario run's metrics; ``guests``: (workload, ok, metrics) per guest; ``ids``: theirs."""
        cad = [m for w, ok, m in guests if ok and category_of(w) == base.CAD]
        ml = [m for w, ok, m in guests if ok and category_of(w) == base.ML]
        names = ids or [f"guest {i}" for i in range(len(guests))]
        return cls(
            makespan_s=phase.get(vocab.MAKESPAN.key, math.nan),
            host_cpu_pct=phase.get(f"{vocab.HOST_CPU.key}.mean", math.nan),
            gpu_util_pct=summarize(v for k, v in phase.items() if vocab.is_gpu_key(k, vocab.GPU_UTIL, "mean")).mean,
            energy_J=phase.get(vocab.ENERGY.key, math.nan),
            cad_guests=len(cad),
            cad_run_time_s=summarize(m.get(vocab.RUN_TIME.key) for m in cad).mean,
            cad_frame_s=summarize(m.get(vocab.RUN_TIME.key, math.nan) / m[vocab.FRAMES.key] for m in cad
                                  if m.get(vocab.FRAMES.key, 0) > 0).mean,
            cad_p95_frame_ms=[m.get(vocab.scoped_key("", vocab.FRAME_TIME, "p95"), math.nan) for m in cad],
            cad_p50_frame_ms=[m.get(vocab.scoped_key("", vocab.FRAME_TIME, "p50"), math.nan) for m in cad],
            cad_frames=sum(m.get(vocab.FRAMES.key, 0.0) for m in cad),
            ml_images_per_sec=min((m.get(vocab.IMAGES_PER_SEC.key, math.nan) for m in ml), default=math.nan),
            ml_images=sum(m.get(vocab.IMAGES.key, 0.0) for m in ml),
            overlap_pct=phase.get(vocab.OVERLAP.key, math.nan),
            failed=sum(1 for _, ok, _ in guests if not ok),
            host_other_cpu_pct=phase.get(f"{vocab.HOST_OTHER_CPU.key}.worst",
                                         phase.get(f"{vocab.HOST_OTHER_CPU.key}.mean", math.nan)),
            ml_rate_blank=sum(1 for m in ml if not m.get(vocab.IMAGES_PER_SEC.key, math.nan) > 0),
            ml_missed=next((missed_target(m) for m in ml if missed_target(m)), ""),
            cad_p99_frame_ms=[m.get(vocab.scoped_key("", vocab.FRAME_TIME, "p99"), math.nan) for m in cad],
            cad_stutter_pct=[m.get(vocab.STUTTER.key, math.nan) for m in cad],
            ml_jitter_pct=summarize(jitter_pct(m) for m in ml).max,  # the finite ones' (max() keeps a NaN first)
            failed_guests=[name for name, (_, ok, _) in zip(names, guests, strict=False) if not ok],
            cad_gpu_mem_MiB=summarize(gpu_mem_MiB(m) for m in cad).max,
            ml_gpu_mem_MiB=summarize(gpu_mem_MiB(m) for m in ml).max,
            cad_stated_MiB=summarize(m.get(vocab.GUEST_GPU_MEM_STATED.key) for m in cad).max,
        )


def gpu_mem_MiB(metrics: dict[str, float]) -> float:
    """The GPU memory a guest needs (what a profile's framebuffer must hold): what its tensors held at their peak
    with its context, where it counted them; else its own count (allocator + context) or NVML's, whichever is
    larger. NVML and the allocator's reserve include what the allocator cached under the cap the guest ran at (a
    larger one caches more): on an H200, mnist-torch under m60-2q's cap held 1,372 MiB with its 684 MiB context,
    its tensors ~290 MiB (their count where m60-1q's cap stopped them)."""
    need = metrics.get(vocab.GUEST_GPU_MEM_NEED.key)
    if isinstance(need, (int, float)) and need > 0:
        return float(need)
    return summarize([metrics.get(vocab.GUEST_GPU_MEM_SELF.key), metrics.get(f"{vocab.GUEST_GPU_MEM.key}.max")]).max


def jitter_pct(metrics: dict[str, float]) -> float:
    """An ML guest's step-time jitter: its timed windows' rates' MAD over their median, in % (NaN under 3 windows)."""
    mad, median = (metrics.get(f"{vocab.IMAGES_PER_SEC.key}.jitter_{s}", math.nan) for s in ("mad", "median"))
    return 100.0 * mad / median if median > 0 else math.nan
