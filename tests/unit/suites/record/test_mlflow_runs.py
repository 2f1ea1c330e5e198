"""Tests of ``suites/record/mlflow_runs.py`` on a real sqlite store: a scenario recorded as a run with a child per
guest, its tags and status; a store that fails half-way leaves the run FAILED, never RUNNING."""

from __future__ import annotations

from pathlib import Path

import pytest

from suites import store_keys as keys
from suites.record import mlflow_runs
from suites.record.store import Tracker
from tests.support.helpers import store_at
from tests.support.outcomes import outcome


def test_a_scenario_is_a_run_with_a_child_per_guest_tagged_as_the_readers_ask(tmp_path: Path):
    from mlflow.tracking import MlflowClient

    tracker = Tracker(store_at(tmp_path / "mlflow.db"), "e", tmp_path / "artifacts")
    got = outcome()
    rid = mlflow_runs.scenario_run(got, tracker, {"workload.framework": "torch"}, tmp_path,
                                   mlflow_runs.Named("single", tags={keys.PHASE: "1-gpu"}))
    client = MlflowClient(tracker.uri)
    run = client.get_run(rid)
    assert run.info.status == mlflow_runs.RUN_STATUS[got.status]
    assert run.data.tags[keys.ROLE] == "scenario" and run.data.tags[keys.PHASE] == "1-gpu"
    assert run.data.tags[keys.HOST_BUSY] == (got.host_busy or "no")
    assert run.data.params["framework"] == "torch" and run.data.metrics["guests_ok"] == len(got.ok_guests)
    guests = client.search_runs([run.info.experiment_id], f"tags.mlflow.parentRunId = '{rid}'")
    assert sorted(g.data.tags[keys.GUEST_ID] for g in guests) == sorted(o.spec.guest_id for o in got.guests)
    assert {g.data.tags[keys.ROLE] for g in guests} == {"guest"}


def test_a_store_that_fails_half_way_leaves_the_run_failed_with_where_the_record_went(tmp_path: Path,
                                                                                      monkeypatch):
    from mlflow.tracking import MlflowClient

    tracker = Tracker(store_at(tmp_path / "mlflow.db"), "e", tmp_path / "artifacts")
    monkeypatch.setattr(tracker, "metrics", lambda *a: (_ for _ in ()).throw(OSError("disk full")))
    with pytest.raises(OSError):
        mlflow_runs.scenario_run(outcome(), tracker, {}, tmp_path, mlflow_runs.Named("single"))
    (run,) = MlflowClient(tracker.uri).search_runs([tracker.experiment_id])
    assert run.info.status == "FAILED" and "recording failed here (disk full)" in run.data.tags[keys.INCOMPLETE]


def test_a_cad_guests_pixels_are_tagged_per_viewset_and_a_mismatch_anywhere_is_said():
    info = {"viewsets": ["a", "b"], "a.status": "ok", "b.status": "mismatch"}
    assert mlflow_runs.viewset_tags(info) == {"bench.viewset.a": "ok", "bench.viewset.b": "mismatch",
                                              "bench.pixels": "mismatch"}
    assert mlflow_runs.viewset_tags({}) == {}
