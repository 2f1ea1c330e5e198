"""Tests of ``suites/record/store_reader.py`` on a real sqlite store: the questions the commands ask of a store,
answered as plain data."""

from __future__ import annotations

from pathlib import Path

import pytest

from suites import store_keys as keys
from suites.record.store_reader import StoreReader
from tests.support import consolidations
from tests.support.helpers import store_at

STEPS = {1: {"frame_ms": 40.0, "p95": 70.0, "rate": 990.0}}


@pytest.mark.heavy
def test_the_newest_finished_run_of_a_kind_with_a_tag_and_a_runs_children(tmp_path: Path):
    from mlflow.tracking import MlflowClient

    uri = store_at(tmp_path / "mlflow.db")
    older = consolidations.record(uri, "e", "m60-2q", STEPS, repeats=1, tags={keys.SIZING_KEY: "k"})
    newer = consolidations.record(uri, "e", "m60-2q", STEPS, repeats=1, tags={keys.SIZING_KEY: "k"})
    other = consolidations.record(uri, "e", "m60-2q", STEPS, repeats=1, tags={keys.SIZING_KEY: "other"})
    client = MlflowClient(uri)
    client.set_terminated(newer, "KILLED")  # half-measured: never the answer
    store = StoreReader(uri)
    assert store.newest_finished("e", "consolidation", keys.SIZING_KEY, "k") == older
    assert store.newest_finished("e", "consolidation", keys.SIZING_KEY, "none") is None
    assert store.newest_finished("no such experiment", "consolidation", keys.SIZING_KEY, "k") is None
    run = store.run(other)
    assert run.status == "FINISHED" and run.tags[keys.KIND] == "consolidation" and run.tags[keys.SIZING_KEY] == "other"
    phases = store.children(older)
    assert [p.tags[keys.PHASE] for p in phases] == ["m60-2q/ml", "m60-2q/cad", "m60-2q/n1"]  # oldest first
    assert store.child(older, keys.PHASE, "m60-2q/n1") == phases[2].run_id
    assert store.child(older, keys.PHASE, "m60-2q/n9") is None
    skipped: list[str] = []
    numbers = store.phases(older, skipped)
    assert sorted(numbers) == ["m60-2q/cad", "m60-2q/ml", "m60-2q/n1"] and skipped == []
    assert store.latest("e", "consolidation").run_id == other
    assert store.of_kind(older, "consolidation", "--run").run_id == older
    with pytest.raises(LookupError, match="is a consolidation run, not a study comparison"):
        store.of_kind(older, "study", "--study")
    assert set(store.header(older)) >= {"host", "GPU", "date", "git SHA"}


def test_roots_counts_launched_runs_however_many_runs_each_nests(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Hostile round C15/C16: the limit counted every FINISHED run before the nested ones were dropped, so a history
    over 300 comparisons said "15 run(s)" and a newest comparison of 480 nested runs left --latest with none.
    Here: pages of 4 runs over comparisons of 5 runs each (a parent, two phases, their guests)."""
    from suites.record import store_reader
    from tests.support import compared_runs

    monkeypatch.setattr(store_reader, "ROOTS_PAGE", 4)
    uri = store_at(tmp_path / "mlflow.db")
    made = [compared_runs.comparison(uri, {"cpu": [100.0], "1-gpu": [400.0]}) for _ in range(3)]
    store = StoreReader(uri)
    assert [r.run_id for r in store.roots("gpu-mixed-bench", 3)] == made[::-1]
    assert [r.run_id for r in store.roots("gpu-mixed-bench", 2)] == made[:0:-1]
    assert store.roots("no such experiment", 3) == []


def test_a_run_directory_named_by_a_wildcard_finds_no_run_but_its_own(tmp_path: Path):
    """Hostile round: 'A=/' or a folder named '_' picked the newest run (SQL LIKE's wildcards)."""
    from tests.support import compared_runs

    uri = store_at(tmp_path / "mlflow.db")
    compared_runs.bench(uri, 100.0, name="2026-11-28_06-00-00.000-42")
    underscore = compared_runs.bench(uri, 100.0, name="_")
    store = StoreReader(uri)
    assert store.named("gpu-mixed-bench", "") == [] and store.named("gpu-mixed-bench", "%") == []  # '/', '%'
    assert len(store.named("gpu-mixed-bench", "42")) == 1  # a name's end, as before
    assert [r.run_id for r in store.named("gpu-mixed-bench", "_")] == [underscore]
    assert store.named("gpu-mixed-bench", "0-42x") == []
