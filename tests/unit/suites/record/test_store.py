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


def test_a_run_a_person_launched_records_the_command_that_ran_it_without_its_credentials(tmp_path: Path,
                                                                                          monkeypatch):
    from suites.record.store import command_line

    suites_main = str(Path(__file__).resolve().parents[4] / "suites" / "__main__.py")
    assert command_line([suites_main, "bench", "tracking_uri=https://alice:s3cret@mlflow.example", "x=a b"]) == \
        "python -m suites bench tracking_uri=https://***@mlflow.example 'x=a b'"
    study = str(Path(__file__).resolve().parents[4] / "suites" / "study" / "command.py")
    assert command_line([study, "study.budget_s=60"]) == "python -m suites.study.command study.budget_s=60"
    monkeypatch.setattr("sys.argv", [suites_main, "size", "sizing.repeats=2"])
    tracker = Tracker(store_at(tmp_path / "mlflow.db"), "gpu-mixed-bench", tmp_path / "artifacts")
    root = tracker.start("root", {})
    child = tracker.start("child", {}, parent=root)
    tags = {r: tracker.client.get_run(r).data.tags for r in (root, child)}
    assert tags[root]["bench.command"] == "python -m suites size sizing.repeats=2"
    assert "bench.command" not in tags[child]  # a nested run is part of what its root's command ran
