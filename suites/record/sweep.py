"""A sweep read back from its job directories: one row per job (a multirun's ``<sweep dir>/<job>/``)."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

from gpu_probe import vocab
from gpu_probe.stats import Interval, confidence_interval


@dataclass
class SweepRow:
    job: str
    profile: str
    workload: str
    status: str
    validity: str
    images_per_sec: Interval  # all guests together; over the guests' repeats (n = repeats)
    fps: float  # graphics composite score, summed over CAD guests
    run_dir: str
    started_at: float = 0.0  # epoch s (results.json)


def collect(sweep_dir: Path) -> list[SweepRow]:
    """Every job under ``sweep_dir`` that left a results.json (a comparison's phases count as one job each)."""
    rows = []
    for results in sorted(sweep_dir.glob("*/results.json"), key=lambda p: (len(p.parent.name), p.parent.name)):
        doc = json.loads(results.read_text())
        guests = doc.get("guests", [])
        spec = guests[0]["spec"] if guests else {}
        rows.append(SweepRow(job=results.parent.name, profile=spec.get("profile", "?"),
                             workload=", ".join(sorted({g["spec"]["workload"] for g in guests})) or "?",
                             status=doc.get("status", "?"),
                             validity=doc.get("validity", "?"),  # written by this suite since it has one
                             images_per_sec=total_rate(guests), fps=total_fps(guests), run_dir=str(results.parent),
                             started_at=float(doc.get("started_at") or 0.0)))
    return rows


def total_rate(guests: list[dict]) -> Interval:
    """images/s of all guests together, per repeat (a guest's repeats are kept in results.json)."""
    ok = [g["result"] for g in guests if g["result"]["status"] == "ok" and vocab.IMAGES_PER_SEC.key in
          g["result"]["metrics"]]
    if not ok:
        return confidence_interval([])
    per_repeat = [r["repeats"] or [r["metrics"]] for r in ok]
    n = min(len(runs) for runs in per_repeat)
    return confidence_interval(sum(runs[i].get(vocab.IMAGES_PER_SEC.key, math.nan) for runs in per_repeat)
                               for i in range(n))


def total_fps(guests: list[dict]) -> float:
    scores = [g["result"]["metrics"].get(vocab.COMPOSITE.key) for g in guests if g["result"]["status"] == "ok"]
    scores = [s for s in scores if isinstance(s, (int, float))]
    return sum(scores) if scores else math.nan
