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


# --- spread and significance of a comparison -----------------------------------------------------------
FASTER, SLOWER, WITHIN_NOISE, NO_SPREAD = "faster", "slower", "within noise", "no spread"
BOOTSTRAP_EXACT_N = 6  # below this many values every resample is enumerated (deterministic); above, 4000 drawn


def covered_fraction(window: tuple[float, float], *spans: tuple[float, float]) -> float:
    """The share of ``window`` (start, end) that any of ``spans`` covers: 1 = all of it, 0 = none; NaN for an
    empty window."""
    length = window[1] - window[0]
    if not length > 0:
        return math.nan
    covered, reach = 0.0, window[0]
    for start, end in sorted(spans):  # the spans' union, clipped to the window
        start, end = max(start, reach), min(end, window[1])
        if end > start:
            covered, reach = covered + end - start, end
    return covered / length


@dataclass(frozen=True)
class Interval:
    """A confidence interval for the mean of a few repeats (n = 1: no spread, bounds NaN)."""

    n: int
    median: float
    mean: float
    low: float
    high: float
    level: float
    method: str  # "t" (n >= 3), "bootstrap" (n = 2), "none" (n < 2)

    @property
    def spread(self) -> bool:
        return self.n >= 2 and not math.isnan(self.low)


def _betacf(a: float, b: float, x: float) -> float:
    """Continued fraction of the regularised incomplete beta function (Lentz's method)."""
    tiny, c, d = 1e-300, 1.0, 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 300):
        for num in (m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
                    -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))):
            d = 1.0 + num * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + num / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < 1e-14:
            break
    return h


def _incomplete_beta(a: float, b: float, x: float) -> float:
    if x <= 0.0 or x >= 1.0:
        return 0.0 if x <= 0.0 else 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1.0 - x) / b


def t_cdf(t: float, df: int) -> float:
    """Student's t distribution function."""
    tail = 0.5 * _incomplete_beta(df / 2.0, 0.5, df / (df + t * t))
    return 1.0 - tail if t >= 0 else tail


def t_quantile(p: float, df: int) -> float:
    """The ``p`` quantile of Student's t with ``df`` degrees of freedom (bisection on :func:`t_cdf`)."""
    lo, hi = -1e3, 1e3
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if t_cdf(mid, df) < p else (lo, mid)
    return (lo + hi) / 2


def _bootstrap_means(xs: list[float], seed: int) -> list[float]:
    import itertools
    import random

    n = len(xs)
    if n < BOOTSTRAP_EXACT_N:
        draws: Iterable[tuple[float, ...]] = itertools.product(xs, repeat=n)
    else:
        rng = random.Random(seed)
        draws = (tuple(rng.choice(xs) for _ in range(n)) for _ in range(4000))
    return sorted(math.fsum(d) / n for d in draws)


def confidence_interval(values: Iterable[float | None], level: float = 0.95, seed: int = 0) -> Interval:
    """Interval for the mean: Student's t for n >= 3, a bootstrap percentile interval for n = 2, none below."""
    xs = sorted(float(v) for v in values if v is not None and math.isfinite(float(v)))
    n = len(xs)
    if n == 0:
        return Interval(0, math.nan, math.nan, math.nan, math.nan, level, "none")
    mean, median = math.fsum(xs) / n, statistics.median(xs)
    if n == 1:
        return Interval(1, median, mean, math.nan, math.nan, level, "none")
    if n == 2:
        means = _bootstrap_means(xs, seed)
        alpha = (1.0 - level) / 2
        return Interval(n, median, mean, percentile(means, 100 * alpha), percentile(means, 100 * (1 - alpha)),
                        level, "bootstrap")
    half = t_quantile(1.0 - (1.0 - level) / 2, n - 1) * statistics.stdev(xs) / math.sqrt(n)
    return Interval(n, median, mean, mean - half, mean + half, level, "t")


NOISE_PCT = 5.0  # a ratio whose interval lies within +-5 % of 1 is "within noise": a run-to-run spread seen on CPUs
INCONCLUSIVE = "inconclusive"


def ratio_interval(values: Iterable[float | None], level: float = 0.95, seed: int = 0) -> Interval:
    """Interval for a ratio (a positive quantity) from per-repeat ratios: :func:`confidence_interval` of their logs,
    taken back (a geometric mean with bounds that stay > 0: no slowdown interval reaching below -100 %). ``median``
    is the median of the ratios themselves, ``mean`` their geometric mean."""
    xs = [float(v) for v in values if v is not None and math.isfinite(float(v)) and float(v) > 0]
    iv = confidence_interval([math.log(x) for x in xs], level, seed)
    back = (lambda v: math.exp(v) if v == v else math.nan)  # noqa: E731
    return Interval(iv.n, statistics.median(xs) if xs else math.nan, back(iv.mean), back(iv.low), back(iv.high),
                    level, f"log-{iv.method}" if iv.n >= 2 else iv.method)


def half_width_pct(iv: Interval) -> float:
    """Half the interval's width in % of its centre, on the log scale (a ratio's ±X %)."""
    if not iv.spread or not (iv.low > 0 and iv.high > 0):
        return math.nan
    return (math.sqrt(iv.high / iv.low) - 1.0) * 100.0


def repeats_to_settle(iv: Interval, target_pct: float) -> int:
    """About how many repeats would shrink the interval's half width to ``target_pct`` (it goes as 1/sqrt(n))."""
    hw = half_width_pct(iv)
    if not hw == hw or target_pct <= 0:
        return iv.n + 1
    return max(iv.n + 1, math.ceil(iv.n * (hw / target_pct) ** 2))


def inconclusive(iv: Interval, target_pct: float, why: str = "") -> str:
    """``inconclusive (CI ±X %, n=N; ~M repeats would settle it)``, or with n < 2 ``inconclusive (n=1: no spread)``."""
    if not iv.spread:
        return f"{INCONCLUSIVE} (n={iv.n}: no spread{'; ' + why if why else ''})"
    return (f"{INCONCLUSIVE} (CI ±{half_width_pct(iv):.1f} %, n={iv.n}; {why + '; ' if why else ''}"
            f"~{repeats_to_settle(iv, target_pct)} repeats would settle it)")


def verdict(ratio: Interval, higher_is_better: bool, reference: float = 1.0, noise_pct: float = NOISE_PCT) -> str:
    """faster / slower where the interval of a ratio (:func:`ratio_interval`) lies wholly on one side of
    ``reference``; ``within noise`` where it straddles it and is no wider than ±``noise_pct``; ``inconclusive (...)``
    where it straddles it and is wider (more repeats could still go either way); ``no spread`` with n < 2."""
    if not ratio.spread:
        return NO_SPREAD
    if ratio.low > reference:
        return FASTER if higher_is_better else SLOWER
    if ratio.high < reference:
        return SLOWER if higher_is_better else FASTER
    if half_width_pct(ratio) <= noise_pct:
        return WITHIN_NOISE
    effect = abs(ratio.mean / reference - 1.0) * 100.0 if ratio.mean == ratio.mean else 0.0
    return inconclusive(ratio, max(noise_pct, effect))


def judge_limit(iv: Interval, limit: float) -> str:
    """A quantity held to an upper ``limit`` (a slowdown in %, a ratio): ``meets`` where the whole interval is at
    or under it, ``misses`` where the whole interval is over it, ``inconclusive`` where it straddles it or there is
    no interval (n < 2)."""
    if not iv.spread:
        return INCONCLUSIVE
    if iv.high <= limit:
        return "meets"
    if iv.low > limit:
        return "misses"
    return INCONCLUSIVE


def goal(iv: Interval, target: float) -> str:
    """A higher-is-better figure (a ratio, a rate) against its ``target``: ``met`` when its whole 95 % interval is at
    or above it, ``missed`` when the whole interval is below it, ``undecided`` when the interval spans it (more
    rounds decide); one figure without a spread is judged as it is; no figure: ``no rate``."""
    if not iv.n or iv.median != iv.median:
        return "no rate"
    if not iv.spread:
        return "met" if iv.median >= target else "missed"
    return "met" if iv.low >= target else ("missed" if iv.high < target else "undecided")


def paired_ratios(values: list[float], baseline: list[float]) -> list[float]:
    """Repeat i of a phase over repeat i of the baseline (interleaved runs share their drift)."""
    return [v / b for v, b in zip(values, baseline, strict=False)
            if math.isfinite(v) and math.isfinite(b) and b != 0]


@dataclass(frozen=True)
class ClockOffset:
    """Another clock minus this one, from round trips: ``offset_s`` the median over the rounds, ``residual_s`` how
    far the truth can be from it (a reply was stamped somewhere within its round trip, so each round bounds the truth
    to its midpoint estimate ± half its round trip; the tightest such bound on the median), ``spread_s`` the rounds'
    own scatter (MAD), ``n`` rounds."""

    offset_s: float
    residual_s: float
    spread_s: float
    n: int

    def text(self) -> str:
        return f"{self.offset_s * 1e3:+.1f} ms ± {self.residual_s * 1e3:.1f} (n={self.n})"


def clock_offset(round_trips: Iterable[tuple[float, float, float]]) -> ClockOffset:
    """(sent, their time, received) per round, sent and received on this clock: NTP's estimate, the other clock at
    the round trip's midpoint; the median over rounds so one delayed reply does not move it."""
    rounds = [(sent, theirs, got) for sent, theirs, got in round_trips if got >= sent]
    if not rounds:
        return ClockOffset(math.nan, math.nan, math.nan, 0)
    offsets = [theirs - (sent + got) / 2 for sent, theirs, got in rounds]
    mid = statistics.median(offsets)
    bound = min(abs(mid - o) + (got - sent) / 2 for o, (sent, _, got) in zip(offsets, rounds, strict=True))
    return ClockOffset(mid, bound, statistics.median(abs(o - mid) for o in offsets), len(rounds))


NO_CHANGE = "no change"


def unpaired_ratio_interval(a: Iterable[float | None], b: Iterable[float | None], level: float = 0.95) -> Interval:
    """Interval for B / A where A and B are two runs' repeats (independent: repeat i of one saw nothing of repeat
    i of the other, unlike a comparison's interleaved phases): Welch's t on the logs, taken back, so the ratio's
    bounds stay > 0. ``median`` is median(B) / median(A); n is the smaller side's repeats (no spread below 2)."""
    la, lb = ([math.log(float(v)) for v in vs if v is not None and math.isfinite(float(v)) and float(v) > 0]
              for vs in (a, b))
    n = min(len(la), len(lb))
    if n == 0:
        return Interval(0, math.nan, math.nan, math.nan, math.nan, level, "none")
    median = math.exp(statistics.median(lb) - statistics.median(la))
    diff = math.fsum(lb) / len(lb) - math.fsum(la) / len(la)
    if n < 2:
        return Interval(n, median, math.exp(diff), math.nan, math.nan, level, "none")
    va, vb = statistics.variance(la) / len(la), statistics.variance(lb) / len(lb)
    se = math.sqrt(va + vb)
    if se == 0.0:  # identical repeats on both sides: the ratio is exact
        return Interval(n, median, math.exp(diff), math.exp(diff), math.exp(diff), level, "welch-log")
    df = se**4 / ((va**2 / (len(la) - 1) if va else 0.0) + (vb**2 / (len(lb) - 1) if vb else 0.0))
    half = t_quantile(1.0 - (1.0 - level) / 2, df) * se
    return Interval(n, median, math.exp(diff), math.exp(diff - half), math.exp(diff + half), level, "welch-log")


def change(ratio: Interval, higher_is_better: bool, noise_pct: float = NOISE_PCT) -> str:
    """What B / A (:func:`unpaired_ratio_interval`) says of B: ``no change`` where the interval lies wholly inside
    1 ± ``noise_pct`` % (a tight interval just off 1 is a change too small to matter); else ``faster`` / ``slower``
    where it lies wholly on one side of 1; else ``inconclusive (...)`` with the repeats that would settle it; ``no
    spread`` with a single repeat on either side."""
    if not ratio.spread:
        return NO_SPREAD
    if ratio.low >= 1.0 - noise_pct / 100.0 and ratio.high <= 1.0 + noise_pct / 100.0:
        return NO_CHANGE  # whatever changed is inside the noise band, even where the interval misses 1
    if ratio.low > 1.0:
        return FASTER if higher_is_better else SLOWER
    if ratio.high < 1.0:
        return SLOWER if higher_is_better else FASTER
    return inconclusive(ratio, noise_pct)


def worse_by_pct(ratio: Interval, higher_is_better: bool) -> float:
    """How much worse B is than A by the interval's bound nearest to no change (not its median), in %: > 0 only
    where even that bound is worse; NaN without an interval."""
    if not ratio.spread:
        return math.nan
    return (1.0 - ratio.high) * 100.0 if higher_is_better else (ratio.low - 1.0) * 100.0
