"""Consolidation runs as curve.py's counts, the GPU's profiles as candidates: from what was measured, nothing more.

A count's tile (one repeat) holds, against the baselines of the same repeat index:

- ``cad_slowdown_pct``: the CAD guests' mean run time over the CAD guest alone's (the reference study's "CAD");
- ``ml_slowdown_pct``: the ML guest's time per image over its time alone (suites.run.mixed.ml_slowdown_pct);
- ``cad_p95_frame_ms``, ``cad_p99_frame_ms``, ``cad_stutter_pct``: the worst CAD guest's;
- ``ml_jitter_pct``: the ML guest's rate jitter;

and what the users feel (nVector's view), reported, never limited: the worst CAD guest's frame rate at its median
frame and at its 95th-percentile frame (``cad_fps_median``, ``cad_fps_p5``: 1000 / its p50 and p95 frame times), the ML
guest's images/s, and the host's CPU and GPU use over the count.
"""

from __future__ import annotations

import math

from gpu_probe.inventory import Inventory
from gpu_probe.stats import summarize
from suites.capacity.curve import GuestCount, Tile
from suites.config.profiles import ProfileConfig
from suites.config.scenario import CAD_ALONE, ML_ALONE
from suites.run.mixed import ml_slowdown_pct, paired, pct_increase
from suites.run.phase_numbers import PhaseNumbers

__all__ = ["demand", "overlap_of", "curve_of", "within_card"]


def tile(count: PhaseNumbers, ml: PhaseNumbers | None, cad: PhaseNumbers | None) -> Tile:
    metrics = {"cad_p95_frame_ms": summarize(count.cad_p95_frame_ms).max,  # the worst CAD guest's
               "cad_p99_frame_ms": summarize(count.cad_p99_frame_ms).max,
               "cad_stutter_pct": summarize(count.cad_stutter_pct).max, "ml_jitter_pct": count.ml_jitter_pct,
               "cad_fps_median": fps(count.cad_p50_frame_ms), "cad_fps_p5": fps(count.cad_p95_frame_ms),
               "ml_images_per_sec": count.ml_images_per_sec, "host_cpu_pct": count.host_cpu_pct,
               "gpu_util_pct": count.gpu_util_pct}
    if ml is not None:
        metrics["ml_slowdown_pct"] = ml_slowdown_pct(count, ml)
    if cad is not None:
        metrics["cad_slowdown_pct"] = pct_increase(count.cad_frame_s, cad.cad_frame_s)  # per frame: equal work
    return Tile(metrics, tuple(count.failed_guests) or (("a guest",) * bool(count.failed)))


def fps(frame_ms: list[float]) -> float:
    """The worst CAD guest's frame rate at a frame time of each guest's (its slowest: the largest ms)."""
    worst = summarize(frame_ms).max
    return 1000.0 / worst if worst > 0 else math.nan


def overlap_of(phases: dict[str, list[PhaseNumbers]]) -> float:
    """The least-overlapped count's guests' overlap (%), NaN where no count measured one."""
    return summarize(n.overlap_pct for label, runs in phases.items() if is_count(label) for n in runs).min


def is_count(label: str) -> bool:
    tail = label.rsplit("/", 1)[-1]
    return tail.startswith("n") and tail[1:].isdigit()


def curve_of(phases: dict[str, list[PhaseNumbers]]) -> list[GuestCount]:
    """The counts (``<profile>/n<k>``) of one consolidation, each repeat a tile beside the baselines' repeat of its
    index (the last one where there are fewer)."""
    def base(category: str) -> list[PhaseNumbers]:
        return next((runs for label, runs in phases.items() if label.endswith(f"/{category}")), [])

    ml, cad = base(ML_ALONE), base(CAD_ALONE)
    counts = []
    for label, runs in phases.items():
        if not is_count(label):
            continue
        tail = label.rsplit("/", 1)[-1]
        tiles = tuple(tile(n, paired(ml, i), paired(cad, i)) for i, n in enumerate(runs))
        counts.append(GuestCount(int(tail[1:]), tiles))
    return sorted(counts, key=lambda s: s.guests)


def demand(phases: list[dict[str, list[PhaseNumbers]]]) -> tuple[float, float, float]:
    """(a CAD guest's, an ML guest's) peak GPU memory over every phase measured (NaN where no GPU reported it), and
    what a CAD guest's viewsets stated they need (NaN where no CAD guest said)."""
    runs = [n for p in phases for rs in p.values() for n in rs]
    return (summarize(n.cad_gpu_mem_MiB for n in runs).max, summarize(n.ml_gpu_mem_MiB for n in runs).max,
            summarize(n.cad_stated_MiB for n in runs).max)


def within_card(candidates: list[ProfileConfig], inv: Inventory, notes: list[str]) -> list[ProfileConfig]:
    """The candidates whose framebuffer this host's GPU can give (NVML's total: a card's usable memory is a little
    under its nominal size, ~81,559 of an H100's 81,920 MiB); one that cannot is said and skipped."""
    usable = min((float(g.get("mem_total_MiB") or 0) for g in inv.gpus), default=0.0)
    if not usable:
        return candidates
    kept = [c for c in candidates if (c.framebuffer_MiB or 0) <= usable]
    for c in candidates:
        if c not in kept:
            notes.append(f"{c.name}: not measured: its {c.framebuffer_MiB} MiB framebuffer is more than the "
                         f"{usable:,.0f} MiB this host's GPU has")
    return kept
