"""A sweep read back from its job directories: one row per job (a multirun's ``<sweep dir>/<job>/``).

Each job leaves ``point.json`` (which point it was, by its swept values; and, where it did not run to its own
results, why: refused, failed, interrupted, not run) beside the results.json of a run that started.
"""

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
    point: str = ""  # the swept values that name it (profile=m60-1q scenario.guests=2)
    reason: str = ""  # why it has no results: refused, failed, interrupted or not run


POINT = "point.json"


def write_point(job_dir: Path, point: str, overrides: list[str], status: str = "", reason: str = "",
                what: tuple[str, str] = ("?", "?")) -> None:
    """A job's own record of which point it was; ``status`` and ``reason`` where it has no results of its own;
    ``what``: its profile and workload, as composed."""
    job_dir.mkdir(parents=True, exist_ok=True)
    doc = {"point": point, "overrides": overrides, "status": status, "reason": reason, "profile": what[0],
           "workload": what[1]}
    (job_dir / POINT).write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n")


def collect(sweep_dir: Path) -> list[SweepRow]:
    """Every job under ``sweep_dir``, in job order: its results (a comparison's phases count as one job), else
    what its point.json says happened to it."""
    jobs = {p.parent for pattern in ("*/results.json", f"*/{POINT}") for p in sweep_dir.glob(pattern)}
    return [job_row(job) for job in sorted(jobs, key=lambda p: (len(p.name), p.name))]


def job_row(job: Path) -> SweepRow:
    point = json.loads((job / POINT).read_text()) if (job / POINT).is_file() else {}
    results = job / "results.json"
    if not results.is_file():
        return SweepRow(job=job.name, profile=point.get("profile", "?"), workload=point.get("workload", "?"),
                        status=point.get("status") or "?", validity="-",
                        images_per_sec=confidence_interval([]), fps=math.nan, run_dir=str(job),
                        point=point.get("point", ""), reason=point.get("reason", "") or "no results.json")
    doc = json.loads(results.read_text())
    guests = doc.get("guests", [])
    spec = guests[0]["spec"] if guests else {}
    return SweepRow(job=job.name, profile=spec.get("profile", "?"),
                    workload=", ".join(sorted({g["spec"]["workload"] for g in guests})) or "?",
                    status=doc.get("status", "?"), validity=doc.get("validity", "?"),
                    images_per_sec=total_rate(guests), fps=total_fps(guests), run_dir=str(job),
                    started_at=float(doc.get("started_at") or 0.0), point=point.get("point", ""),
                    reason="; ".join(doc.get("reasons") or []) or point.get("reason", ""))


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
