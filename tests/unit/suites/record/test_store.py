"""Tests of ``suites/record/store.py``'s ``runs_url``: the page ``make ui`` points to (its writes are tested against
real stores in e2e/test_fallback_store.py, e2e/test_report.py, e2e/test_sync.py)."""

from __future__ import annotations

from pathlib import Path

from suites.record.store import Tracker, runs_url
from tests.support.helpers import store_at


def test_make_ui_points_at_the_suites_runs_not_a_genai_overview(tmp_path: Path):
    uri = store_at(tmp_path / "mlflow.db")
    empty = runs_url(uri, "gpu-mixed-bench", "5000")
    assert empty == f"MLflow UI: http://127.0.0.1:5000/ (no runs recorded yet in {uri})"
    tracker = Tracker(uri, "gpu-mixed-bench", tmp_path / "artifacts")
    assert runs_url(uri, "gpu-mixed-bench", "5001") == (
        f"MLflow UI: http://127.0.0.1:5001/#/experiments/{tracker.experiment_id}/runs (the suite's runs, experiment "
        "gpu-mixed-bench)")
    exp = tracker.client.get_experiment(tracker.experiment_id)
    assert exp.tags["mlflow.experimentKind"] == "custom_model_development"  # MLflow 3 opens it on its runs
