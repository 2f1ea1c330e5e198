"""The one place where repeated measurements become statistics.

Pure: numbers in, numbers out, no I/O, no numpy needed. NaN entries (missing
samples, e.g. an NVML field the driver does not report) are dropped first.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable
from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class Summary:
    n: int
    mean: float
    median: float
    min: float
    max: float
    p95: float
    stdev: float  # sample standard deviation (n-1)
    stderr: float  # standard error of the mean
    mad: float  # median absolute deviation (unscaled)
    olympic_mean: float  # mean without the single fastest and slowest value
    cov: float  # coefficient of variation, stdev / mean

    def as_dict(self, prefix: str = "") -> dict[str, float]:
        return {f"{prefix}{k}": v for k, v in asdict(self).items()}


def percentile(sorted_values: list[float], q: float) -> float:
    """Linear-interpolated percentile (numpy's default method) of sorted data."""
    if not sorted_values:
        return math.nan
    pos = (len(sorted_values) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def summarize(values: Iterable[float | None]) -> Summary:
    """Median, stderr, MAD, olympic mean, CoV and friends of a sample."""
    xs = sorted(float(v) for v in values if v is not None and not math.isnan(float(v)))
    n = len(xs)
    if n == 0:
        nan = math.nan
        return Summary(0, nan, nan, nan, nan, nan, nan, nan, nan, nan, nan)
    mean = math.fsum(xs) / n
    median = statistics.median(xs)
    stdev = statistics.stdev(xs) if n > 1 else 0.0
    mad = statistics.median(abs(x - median) for x in xs)
    # With fewer than three values there is nothing left after dropping the extremes.
    olympic = math.fsum(xs[1:-1]) / (n - 2) if n > 2 else mean
    return Summary(
        n=n,
        mean=mean,
        median=median,
        min=xs[0],
        max=xs[-1],
        p95=percentile(xs, 95),
        stdev=stdev,
        stderr=stdev / math.sqrt(n),
        mad=mad,
        olympic_mean=olympic,
        cov=stdev / mean if mean else math.nan,
    )


COUNTERS = frozenset({"images", "steps"})  # the same every repeat: nothing to spread


def aggregate_repeats(runs: list[dict[str, float]]) -> dict[str, float]:
    """Metrics of N repeats -> olympic mean per metric, plus its CoV, median, min and max.

    With one run its metrics pass through unchanged. Keys that are already
    statistics (containing a dot, e.g. ``images_per_sec.mad``) are averaged.
    """
    if len(runs) == 1:
        return dict(runs[0])
    out: dict[str, float] = {}
    keys = [k for k in runs[0] if all(k in r for r in runs)]
    for key in keys:
        s = summarize(r[key] for r in runs)
        if s.n == 0:
            continue
        if "." in key or key in COUNTERS:
            out[key] = s.mean
            continue
        out[key] = s.olympic_mean
        out.update({f"{key}.cov": s.cov, f"{key}.median": s.median, f"{key}.min": s.min, f"{key}.max": s.max})
    out["repeats"] = float(len(runs))
    return out
