"""A consolidation curve read for capacity: how many guests per GPU, from the point and from its confidence.

A curve is the counts a consolidation sweep measured (1, 2, ... guests per GPU), each repeated: one *tile* per
repeat (VMmark's word: the set of guests that run together, judged as one). Every QoS metric is held to its
:class:`Limit`. Read from the curve, never past it:

- ``n_point``: the largest guest count whose every count up to it has each metric's *median* within its limit;
- ``n_safe``: the same with each metric's *upper 95 % bound* (a count with one repeat has no bound: not safe);
- the *knee*: the last count before the sharpest rise of the curve's load (each count's worst metric over its limit).

A tile in which any guest failed fails its count, whatever its figures, and the count says which guest. A count
between two measured counts can be *predicted* (interpolated), and is labelled so; one outside them is not given.
Where the sweep skipped counts (``sizing.counts``), the count between the last count that passes and the next measured
one (which misses) whose interpolated figures still meet every limit is the capacity's *predicted* figure.
Pure: no I/O (suites/capacity/solver.py takes capacities to a mix).
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field

from gpu_probe.stats import Interval, confidence_interval, ratio_interval

__all__ = ["QOS_METRICS", "Capacity", "Limit", "Reading", "GuestCount", "Tile", "capacity", "predict"]

MEASURED, PREDICTED = "measured", "predicted"
# The metrics a QoS limit may hold (sizing.qos): a tile's figures (suites/sizing/measured.py)
QOS_METRICS = ("cad_slowdown_pct", "ml_slowdown_pct", "cad_p95_frame_ms", "cad_p99_frame_ms", "cad_stutter_pct",
               "ml_jitter_pct")


@dataclass(frozen=True)
class Limit:
    """A QoS metric's ceiling; a slowdown in % is judged on its ratio's interval (1 + x/100, log scale)."""

    metric: str  # e.g. cad_slowdown_pct, ml_slowdown_pct, cad_p95_frame_ms
    ceiling: float

    @property
    def is_slowdown(self) -> bool:
        return self.metric.endswith("_pct")

    def interval(self, values: list[float]) -> Interval:
        if not self.is_slowdown:
            return confidence_interval(values)
        iv = ratio_interval(1 + v / 100 for v in values)
        back = (lambda r: (r - 1) * 100 if r == r else math.nan)  # noqa: E731
        return Interval(iv.n, back(iv.median), back(iv.mean), back(iv.low), back(iv.high), iv.level, iv.method)


@dataclass(frozen=True)
class Tile:
    """One repeat of one count: each QoS metric's value (a per-guest metric: its worst guest's) and the guests
    that failed."""

    metrics: dict[str, float]
    failed: tuple[str, ...] = ()


@dataclass(frozen=True)
class GuestCount:
    guests: int  # guests per GPU at this count
    tiles: tuple[Tile, ...]


@dataclass
class Reading:
    """One count judged: its medians and bounds per metric, whether it meets QoS on each, and why not."""

    guests: int
    n: int  # repeats
    median: dict[str, float] = field(default_factory=dict)
    upper: dict[str, float] = field(default_factory=dict)  # the 95 % interval's upper bound (NaN with n < 2)
    failed: tuple[str, ...] = ()  # guests that failed in any tile: the count fails
    point_ok: bool = False
    safe_ok: bool = False
    why: str = ""  # why it misses on the point (or, meeting it, on the bound); '' where both meet
    load: float = math.nan  # the worst metric's median over its limit (1 = at the limit)
    upper_load: float = math.nan  # the same of the upper bounds (NaN where no limited metric has one)


@dataclass
class Capacity:
    n_point: int
    n_safe: int
    knee: int | None
    readings: list[Reading]
    why_point: str  # what ended n_point (the first count that missed, or the curve's end)
    why_safe: str
    # (point, safe): a count past n_point / n_safe, short of the next measured count, whose interpolated medians /
    # upper bounds meet every limit; None where the counts leave no gap there (or the next count failed a tile)
    predicted: tuple[int | None, int | None] = (None, None)

    @property
    def gpu_time(self) -> tuple[int, int]:
        """(point, safe) guests per GPU the curve allows: predicted where it gives a figure, else measured."""
        point, safe = self.predicted
        return (self.n_point if point is None else point, self.n_safe if safe is None else safe)

    @property
    def measured(self) -> list[int]:
        return [r.guests for r in self.readings]


def values_of(count: GuestCount, metric: str) -> list[float]:
    """``metric`` in each tile whose guests all finished (a failed tile's figures are not the count's)."""
    values = [t.metrics.get(metric, math.nan) for t in count.tiles if not t.failed]
    return [v for v in values if v == v]


def read_count(count: GuestCount, limits: list[Limit]) -> Reading:
    """One count: every metric's median and upper bound (the limited ones judged, the others reported)."""
    failed = tuple(dict.fromkeys(g for t in count.tiles for g in t.failed))
    r = Reading(count.guests, len(count.tiles), failed=failed)
    counts = {}
    for metric in dict.fromkeys([*(k for t in count.tiles for k in t.metrics), *(lim.metric for lim in limits)]):
        values = values_of(count, metric)
        iv = Limit(metric, math.inf).interval(values)  # the interval's kind follows the metric's name, not its limit
        counts[metric] = len(values)
        r.median[metric] = statistics.median(values) if values else math.nan
        r.upper[metric] = iv.high if iv.spread else math.nan
    misses, unsure = [], []
    for limit in limits:
        median, upper = r.median[limit.metric], r.upper[limit.metric]
        if not counts[limit.metric]:
            misses.append(f"{limit.metric} not measured")
        elif not median <= limit.ceiling:
            misses.append(f"{limit.metric} {median:.1f} > {limit.ceiling:g}")
        elif not upper <= limit.ceiling:
            unsure.append(f"{limit.metric} upper bound {upper:.1f} > {limit.ceiling:g}" if upper == upper
                          else f"{limit.metric}: n={counts[limit.metric]}, no interval")
    r.load, r.upper_load = worst_ratio(r.median, limits), worst_ratio(r.upper, limits)
    if failed:
        misses.insert(0, f"tile failed: {', '.join(failed)} failed")
    r.point_ok = not misses
    r.safe_ok = r.point_ok and not unsure
    r.why = "; ".join(misses or unsure)
    return r


def worst_ratio(values: dict[str, float], limits: list[Limit]) -> float:
    """The largest of ``values`` over its limit (1 = at the limit), NaN where none of them is known."""
    ratios = [values[lim.metric] / lim.ceiling if lim.ceiling else math.inf for lim in limits
              if values[lim.metric] == values[lim.metric]]
    return max(ratios, default=math.nan)


def largest_passing(readings: list[Reading], ok: str) -> tuple[int, str]:
    """(the largest count whose every count up to it passes, what ended it)."""
    best = 0
    for r in readings:
        if not getattr(r, ok):
            return best, f"{r.guests} guest(s): {r.why}"
        best = r.guests
    return best, f"every measured count passed (the curve ends at {readings[-1].guests})" if readings else "no count"


def knee(readings: list[Reading]) -> int | None:
    """The last count before the load's slope rises most (the curve's bend); None under three counts, or where the
    slope never rises."""
    pts = [(r.guests, r.load) for r in readings if r.load == r.load]
    if len(pts) < 3:
        return None
    bends = []
    for (n0, y0), (n1, y1), (n2, y2) in zip(pts, pts[1:], pts[2:], strict=False):
        bends.append(((y2 - y1) / (n2 - n1) - (y1 - y0) / (n1 - n0), n1))
    rise, at = max(bends)
    return at if rise > 0 else None


def capacity(counts: list[GuestCount], limits: list[Limit]) -> Capacity:
    """The curve's capacity on ``limits`` (counts in any order; read in guest order)."""
    readings = [read_count(s, limits) for s in sorted(counts, key=lambda s: s.guests)]
    n_point, why_point = largest_passing(readings, "point_ok")
    n_safe, why_safe = largest_passing(readings, "safe_ok")
    predicted = (between(readings, n_point, limits, "median"), between(readings, n_safe, limits, "upper"))
    return Capacity(n_point, n_safe, knee(readings), readings, why_point, why_safe, predicted)


def lerp(n0: int, v0: float, n1: int, v1: float, n: int) -> float:
    return v0 + (v1 - v0) * (n - n0) / (n1 - n0)


def between(readings: list[Reading], n: int, limits: list[Limit], figures: str) -> int | None:
    """The largest count between count ``n`` (the last that passes) and the next measured count whose ``figures``
    (median or upper) interpolated meet every limit; None where the next count is n + 1, failed a tile, is absent,
    or no count between passes."""
    at = next((r for r in readings if r.guests == n), None)
    after = next((r for r in readings if r.guests > n), None)
    if at is None or after is None or after.failed or after.guests - n < 2:
        return None
    lo, hi = getattr(at, figures), getattr(after, figures)
    for k in range(after.guests - 1, n, -1):
        if all(lerp(n, lo[lim.metric], after.guests, hi[lim.metric], k) <= lim.ceiling for lim in limits):
            return k
    return None


def predict(readings: list[Reading], guests: int, metric: str) -> tuple[float, str]:
    """``metric``'s median at ``guests``: (value, MEASURED) where that count was measured, (interpolated, PREDICTED)
    between two measured counts, (NaN, why) outside them: never extrapolated."""
    pts = sorted((r.guests, r.median.get(metric, math.nan)) for r in readings)
    pts = [(n, v) for n, v in pts if v == v]
    for n, v in pts:
        if n == guests:
            return v, MEASURED
    below = [(n, v) for n, v in pts if n < guests]
    above = [(n, v) for n, v in pts if n > guests]
    if not below or not above:
        span = f"{pts[0][0]}..{pts[-1][0]}" if pts else "none"
        return math.nan, f"not measured: {guests} is outside the measured counts ({span})"
    (n0, v0), (n1, v1) = below[-1], above[0]
    return lerp(n0, v0, n1, v1, guests), PREDICTED
