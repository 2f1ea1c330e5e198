"""The GPUs' figures over a guest's timed windows (each repeat's training, after its warm-up steps).

Pure: a finished sampling (its rows and the driver's utilisation samples) and the windows in,
``timed.<gpu column>.<stat>`` out. A row counts for every column but utilisation when its time lies in a window.
Utilisation comes, where NVML kept them, from the driver's own samples whose whole period lies in a window: a row's
utilisation reading is the driver's previous period, so rows just inside a window's start still report the idle
time before it (gpu_probe/nvml.py, ``util_samples``). Without such samples (older drivers, windows shorter than one
period, replayed traces) the rows' readings stand and ``timed.gpu0.util_pct.periods`` is absent: the figure says
which.
"""

from __future__ import annotations

from gpu_probe import vocab
from gpu_probe.sampler import SampleSet, aggregate
from gpu_probe.stats import summarize

Window = tuple[float, float]  # epoch seconds


def periods_inside(samples: list[tuple[float, float]], windows: list[Window]) -> list[tuple[float, float]]:
    """(seconds, %) of each driver period that lies wholly in one window; the first sample has no known start."""
    return [(t - prev, pct) for (prev, _), (t, pct) in zip(samples, samples[1:], strict=False)
            if t > prev and any(a <= prev and t <= b for a, b in windows)]


def timed_gpu(samples: SampleSet, windows: list[Window]) -> dict[str, float]:
    """The GPU columns of the rows inside ``windows`` as ``timed.<column>.<stat>`` with ``timed.samples`` (how
    many rows), utilisation from the driver's periods inside them where there are any; {} without windows."""
    if not windows:
        return {}
    inside = [r for r in samples.rows if any(a <= samples.t0 + r["t_s"] <= b for a, b in windows)]
    out = {f"{vocab.TIMED}{k}": v for k, v in aggregate(inside).items() if k.startswith("gpu")}
    for index, driver in samples.util_samples.items():
        periods = periods_inside(driver, windows)
        if not periods:
            continue
        key = f"{vocab.TIMED}{vocab.gpu_key(index, vocab.GPU_UTIL)}"
        s = summarize(pct for _, pct in periods)
        # weighted by each period's length: the share of the windows' time a kernel ran
        out.update({f"{key}.mean": sum(d * pct for d, pct in periods) / sum(d for d, _ in periods),
                    f"{key}.p95": s.p95, f"{key}.max": s.max, f"{key}{vocab.PERIODS}": float(len(periods))})
    return {**out, vocab.TIMED_SAMPLES: float(len(inside))} if out else out
