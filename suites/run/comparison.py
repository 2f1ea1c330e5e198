"""Comparison scenarios, as pure functions over outcomes: one row per phase, normalised to the baseline phase.

A phase runs ``scenario.repeats`` times, interleaved with the other phases
(A B C A B C), so repeat ``i`` of a phase is compared with repeat ``i`` of the
baseline: both saw the same drift. Every ratio carries n, its median, a 95 %
confidence interval over the per-repeat ratios (on the log scale: a ratio's
interval stays above 0) and a verdict: faster / slower where the interval lies
on one side of 1, within noise where it straddles 1 inside ±5 %, inconclusive
(with the repeats that would settle it) where it straddles 1 and is wider,
``no spread`` with one repeat.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field

from gpu_probe import vocab
from gpu_probe.stats import NO_SPREAD, paired_ratios, ratio_interval, summarize, verdict
from suites import store_keys as keys
from suites.run.outcome import ScenarioOutcome
from suites.validity import ENFORCED, first_reason, weakest
from suites.workloads.base import TIME

ROW_METRICS = ("images_per_sec", "throughput_x", "throughput_x.ci_low", "throughput_x.ci_high", "train_time_s",
               "time_x", "time_x.ci_low", "time_x.ci_high", "guest_cpu_pct", "host_cpu_pct", "gpu_util_pct",
               "n")  # what a comparison run records per phase
CSV_COLUMNS = ("label", "profile", "guests", "status", "validity", "n", "images_per_sec", "throughput_x",
               "throughput_x_ci_low", "throughput_x_ci_high", "throughput_verdict", "train_time_s", "time_x",
               "time_x_ci_low", "time_x_ci_high", "time_verdict", "time_basis", "guest_cpu_pct", "host_cpu_pct",
               "gpu_util_pct", "reference")
# What a phase's time ratio compares. Train time is the work's time only where the phases trained the same work; a
# phase sized by time (workload.size_by=time) fills its window whatever its speed, so its train time is the window
# and the ratio of two such times is ~1 by construction: time per image (the inverse of the throughput ratio) then.
TRAIN_TIME, TIME_PER_IMAGE = "train time", "time per image"


@dataclass
class PhaseRow:
    label: str
    profile: str
    guests: int
    status: str  # the worst repeat's
    images_per_sec: float  # all guests together; median over repeats
    train_time_s: float  # the slowest guest: when the phase's work was done; median over repeats
    guest_cpu_pct: float  # mean over guests, 100 = one core
    host_cpu_pct: float
    gpu_util_pct: float
    validity: str = ENFORCED  # the weakest repeat's (suites/validity.py)
    validity_reason: str = ""  # where it is not the usual one: a TCG VM's guests
    n: int = 1  # repeats measured
    gpus: int = 0  # GPUs the phase's guests ask for together (their profiles'), the x of a scaling curve
    reference: str = ""  # the reference study's figure for this phase (scenario.phases[].reference)
    host_busy: str = ""  # a repeat's "host busy (...)": its ratios carry no verdict
    images_per_sec_runs: list[float] = field(default_factory=list)  # per repeat, in run order
    train_time_runs: list[float] = field(default_factory=list)
    sized_by_time: bool = False  # a guest of the phase was sized by time (its train time is its window)
    time_basis: str = TRAIN_TIME  # what time_x compares (TRAIN_TIME or TIME_PER_IMAGE), set by normalise
    time_x: float = math.nan  # train time (or time per image) / baseline's: median of the per-repeat ratios
    time_x_ci_low: float = math.nan
    time_x_ci_high: float = math.nan
    time_verdict: str = NO_SPREAD
    throughput_x: float = math.nan  # images/s / baseline's
    throughput_x_ci_low: float = math.nan
    throughput_x_ci_high: float = math.nan
    throughput_verdict: str = NO_SPREAD

    def csv(self) -> dict[str, object]:
        return {c: getattr(self, c) for c in CSV_COLUMNS}


STATUS_ORDER = ("interrupted", "failed", "partial", "ok")  # worst first


def phase_row(label: str, outcomes: list[ScenarioOutcome]) -> PhaseRow:
    """One phase over its repeats (each a scenario run's outcome)."""
    rates = [total_images_per_sec(o) for o in outcomes]
    times = [slowest_train_time(o) for o in outcomes]
    host = [o.host_metrics for o in outcomes]
    first = outcomes[0]
    return PhaseRow(
        label=label,
        profile=first.guests[0].spec.profile if first.guests else "?",
        guests=len(first.guests),
        status=min((o.status for o in outcomes), key=STATUS_ORDER.index),
        images_per_sec=median(rates),
        train_time_s=median(times),
        guest_cpu_pct=median([summarize(g.sampled.get(f"{vocab.GUEST_CPU.key}.mean") for g in o.guests).mean
                              for o in outcomes]),
        host_cpu_pct=median([h.get(f"{vocab.HOST_CPU.key}.mean", math.nan) for h in host]),
        gpu_util_pct=median([summarize(v for k, v in h.items() if vocab.is_gpu_key(k, vocab.GPU_UTIL, "mean")).mean
                             for h in host]),
        validity=weakest([o.validity for o in outcomes]),
        validity_reason=first_reason(o.validity_reason for o in outcomes),
        n=len(outcomes),
        host_busy=next((o.host_busy for o in outcomes if o.host_busy), ""),
        gpus=sum(g.spec.profile_gpus for g in first.guests),
        sized_by_time=any(g.result.info.get("sized_by") == TIME for o in outcomes for g in o.ok_guests),
        images_per_sec_runs=rates,
        train_time_runs=times,
    )


def total_images_per_sec(outcome: ScenarioOutcome) -> float:
    """The guests' images/s together: those that train (a CAD guest beside them has no image rate, NaN)."""
    rates = [o.result.metrics.get(vocab.IMAGES_PER_SEC.key, math.nan) for o in outcome.ok_guests]
    finite = [r for r in rates if math.isfinite(r)]
    return sum(finite) if finite else math.nan


def slowest_train_time(outcome: ScenarioOutcome) -> float:
    return max((o.result.metrics.get(vocab.TRAIN_TIME.key, math.nan) for o in outcome.ok_guests), default=math.nan)


def median(values: list[float]) -> float:
    finite = [v for v in values if isinstance(v, (int, float)) and math.isfinite(v)]
    return statistics.median(finite) if finite else math.nan


def normalise(rows: list[PhaseRow], baseline: str | None, level: float = 0.95) -> list[PhaseRow]:
    """Each phase's throughput and train time over the baseline's: median ratio, CI and verdict. Where a phase or the
    baseline was sized by time, the time ratio is of time per image (equal work), said in ``time_basis``."""
    base = next((r for r in rows if r.label == baseline), rows[0] if rows else None)
    if base is None:
        return rows
    for r in rows:
        ratios = paired_ratios(r.images_per_sec_runs or [r.images_per_sec],
                               base.images_per_sec_runs or [base.images_per_sec])
        iv = ratio_interval(ratios, level)
        r.throughput_x, r.throughput_x_ci_low, r.throughput_x_ci_high = iv.median, iv.low, iv.high
        busy = r.host_busy or base.host_busy
        r.throughput_verdict = verdict(iv, higher_is_better=True) if r is not base else "baseline"
        if r.sized_by_time or base.sized_by_time:  # seconds per image: the baseline's rate over this phase's
            r.time_basis = TIME_PER_IMAGE
            ratios = paired_ratios(base.images_per_sec_runs or [base.images_per_sec],
                                   r.images_per_sec_runs or [r.images_per_sec])
        else:
            r.time_basis = TRAIN_TIME
            ratios = paired_ratios(r.train_time_runs or [r.train_time_s], base.train_time_runs or [base.train_time_s])
        iv = ratio_interval(ratios, level)
        r.time_x, r.time_x_ci_low, r.time_x_ci_high = iv.median, iv.low, iv.high
        r.time_verdict = verdict(iv, higher_is_better=False) if r is not base else "baseline"
        if busy and r is not base:  # the host's other load is in the ratios: no verdict either way
            r.throughput_verdict = r.time_verdict = f"inconclusive ({busy})"
    return rows


def row_metrics(rows: list[PhaseRow]) -> dict[str, float]:
    """``<phase>.<metric>`` for every phase: the comparison run's metrics."""
    return {f"{r.label}.{k}": getattr(r, k.replace(".", "_")) for r in rows for k in ROW_METRICS}


def curves(rows: list[PhaseRow]) -> dict[str, list[tuple[int, float]]]:
    """Throughput over the phases' GPU count (or guest count, where the GPUs are the same), for a chart."""
    by_gpus = len({r.gpus for r in rows}) == len(rows)
    x = (lambda r: r.gpus) if by_gpus else (lambda r: r.guests)
    axis = "gpus" if by_gpus else "guests"
    return {f"curve_by_{axis}.images_per_sec": [(x(r), r.images_per_sec) for r in rows],
            f"curve_by_{axis}.throughput_x": [(x(r), r.throughput_x) for r in rows]}


def row_tags(rows: list[PhaseRow]) -> dict[str, str]:
    """The verdicts and validity per phase, as the comparison run's tags."""
    tags = {keys.VALIDITY: weakest([r.validity for r in rows]),
            keys.VALIDITY_REASON: first_reason(r.validity_reason for r in rows)}
    for r in rows:
        tags[keys.verdict(r.label, "throughput")] = r.throughput_verdict
        tags[keys.verdict(r.label, "time")] = r.time_verdict
        tags[keys.time_basis(r.label)] = r.time_basis
        tags[keys.validity_of(r.label)] = r.validity
    return tags
