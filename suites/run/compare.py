"""Comparison scenarios, as pure functions over outcomes: one row per phase, normalised to the baseline phase."""

from __future__ import annotations

import math
from dataclasses import dataclass

from gpu_probe import vocab
from gpu_probe.stats import summarize
from suites.run.outcome import ScenarioOutcome

ROW_METRICS = ("images_per_sec", "throughput_x", "train_time_s", "time_x", "guest_cpu_pct", "host_cpu_pct",
               "gpu_util_pct")  # what a comparison run records per phase


@dataclass
class PhaseRow:
    label: str
    profile: str
    guests: int
    status: str
    images_per_sec: float  # all guests together
    train_time_s: float  # the slowest guest: when the phase's work was done
    guest_cpu_pct: float  # mean over guests, 100 = one core
    host_cpu_pct: float
    gpu_util_pct: float
    time_x: float = math.nan  # train time / baseline's
    throughput_x: float = math.nan  # images/s / baseline's


def phase_row(label: str, outcome: ScenarioOutcome) -> PhaseRow:
    ok = outcome.ok_guests
    host = outcome.host_metrics
    gpu = summarize(v for k, v in host.items() if vocab.is_gpu_key(k, vocab.GPU_UTIL, "mean"))
    return PhaseRow(
        label=label,
        profile=outcome.guests[0].spec.profile if outcome.guests else "?",
        guests=len(outcome.guests),
        status=outcome.status,
        images_per_sec=sum(o.result.metrics.get(vocab.IMAGES_PER_SEC.key, 0.0) for o in ok) if ok else math.nan,
        train_time_s=max((o.result.metrics.get(vocab.TRAIN_TIME.key, math.nan) for o in ok), default=math.nan),
        guest_cpu_pct=summarize(o.sampled.get(f"{vocab.GUEST_CPU.key}.mean") for o in outcome.guests).mean,
        host_cpu_pct=host.get(f"{vocab.HOST_CPU.key}.mean", math.nan),
        gpu_util_pct=gpu.mean,
    )


def normalise(rows: list[PhaseRow], baseline: str | None) -> list[PhaseRow]:
    base = next((r for r in rows if r.label == baseline), rows[0] if rows else None)
    for r in rows:
        if base is not None:
            r.time_x = r.train_time_s / base.train_time_s if base.train_time_s else math.nan
            r.throughput_x = r.images_per_sec / base.images_per_sec if base.images_per_sec else math.nan
    return rows


def row_metrics(rows: list[PhaseRow]) -> dict[str, float]:
    """``<phase>.<metric>`` for every phase: the comparison run's metrics."""
    return {f"{r.label}.{k}": getattr(r, k) for r in rows for k in ROW_METRICS}
