"""Tests of ``suites/record/sweep_points.py``: a sweep's jobs read back in order, each with its results or what its
point.json says happened to it."""

from __future__ import annotations

import json
import math
from pathlib import Path

from suites.record.sweep_points import collect, write_point


def guest(workload: str, rates: list[float], composite: float | None = None) -> dict:
    metrics = {"images_per_sec": sum(rates) / len(rates)} if rates else {}
    if composite is not None:
        metrics["composite_fps"] = composite
    return {"spec": {"profile": "m60-2q", "workload": workload},
            "result": {"status": "ok", "metrics": metrics, "repeats": [{"images_per_sec": r} for r in rates]}}


def test_jobs_come_back_in_job_order_with_their_results_or_their_points_reason(tmp_path: Path):
    for job in ("0", "1", "10", "2"):
        write_point(tmp_path / job, f"scenario.guests={job}", [f"scenario.guests={job}"], what=("m60-2q", "idle"))
    doc = {"status": "ok", "validity": "not enforced", "started_at": 5.0,
           "guests": [guest("mnist-torch", [100.0, 110.0]), guest("mnist-torch", [50.0, 60.0])]}
    (tmp_path / "1" / "results.json").write_text(json.dumps(doc))
    write_point(tmp_path / "2", "scenario.guests=2", [], status="refused", reason="too big", what=("m60-2q", "idle"))
    rows = collect(tmp_path)
    assert [r.job for r in rows] == ["0", "1", "2", "10"]
    ran = rows[1]
    assert ran.status == "ok" and ran.images_per_sec.n == 2 and ran.images_per_sec.median == 160.0
    assert ran.point == "scenario.guests=1" and math.isnan(ran.fps)
    assert (rows[2].status, rows[2].reason) == ("refused", "too big")
    assert rows[0].status == "?" and rows[0].reason == "no results.json"
