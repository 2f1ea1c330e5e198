"""Tests of ``suites/compare/results.py`` on runs recorded into a real store (tests/support/compared_runs.py): a
bench run and a comparison read back as figures with their repeats, marks and set-up."""

from __future__ import annotations

from pathlib import Path

from suites.compare.results import kind_of, read
from suites.record.store_reader import StoreReader
from suites.run_kinds import RunKind
from tests.support import compared_runs
from tests.support.helpers import store_at


def test_a_comparisons_phases_are_figures_with_one_value_per_repeat(tmp_path: Path):
    uri = store_at(tmp_path / "mlflow.db")
    rid = compared_runs.comparison(uri, {"cpu": [100.0, 102.0, 98.0], "1-gpu": [400.0, 410.0]},
                                   {"workload.step_ms": "5"})
    store = StoreReader(uri)
    got = read(store, store.run(rid))
    assert got.kind == RunKind.COMPARISON and got.setup["workload.step_ms"] == "5" and got.setup["host.hostname"]
    rates = got.figures["cpu / mnist-torch images/s"]
    assert sorted(rates.values) == [98.0, 100.0, 102.0] and rates.higher_is_better and rates.marks == []
    assert got.figures["1-gpu / mnist-torch train s"].values == [10_000 / 400, 10_000 / 410]
    assert not got.figures["1-gpu / mnist-torch train s"].higher_is_better
    assert rates.validity == "not enforced" and "cpu / makespan s" in got.figures


def test_a_busy_host_a_smoke_run_and_a_failure_mark_the_figures_they_are_in(tmp_path: Path):
    uri = store_at(tmp_path / "mlflow.db")
    store = StoreReader(uri)
    busy = read(store, store.run(compared_runs.bench(uri, 100.0, tags={"bench.host_busy": "180 % of a core"})))
    smoke = read(store, store.run(compared_runs.bench(uri, 100.0, {"scale": "smoke"})))
    failed = read(store, store.run(compared_runs.bench(uri, 100.0, tags={"bench.status": "partial",
                                                                         "bench.failure": "g1 exited 1"})))
    assert busy.kind == RunKind.BENCH and busy.figures["mnist-torch images/s"].marks == ["host busy"]
    assert busy.mark_lines() == {"host busy": "host busy: 180 % of a core"}
    assert smoke.figures["makespan s"].marks == ["smoke sizes"]
    assert smoke.mark_lines()["smoke sizes"].startswith("smoke sizes: scale=smoke")
    assert failed.figures["makespan s"].marks == ["partial"] and failed.marked == {"partial": ["g1 exited 1"]}


def test_a_mark_is_said_once_per_run_counted_over_its_repeats_and_never_nested_in_its_own_words(tmp_path: Path):
    """make compare said "A: host busy (host busy (other processes: 99 % ...)); A: smoke sizes (...); A: host busy
    (...)" for every figure: every repeat's mark for every figure, each nested in its own words."""
    uri = store_at(tmp_path / "mlflow.db")
    busy = {"bench.host_busy": "host busy (other processes: 99 % of a core; > host_busy_pct=25)"}
    from mlflow.tracking import MlflowClient

    rid = compared_runs.comparison(uri, {"cpu": [100.0, 101.0, 99.0]}, {"scale": "smoke"})
    store = StoreReader(uri)
    for phase in store.children(rid):  # each repeat on a busy host, as the runner tags them
        for k, v in busy.items():
            MlflowClient(uri).set_tag(phase.run_id, k, v)
    got = read(store, store.run(rid))
    assert all(f.marks == ["host busy", "smoke sizes"] for f in got.figures.values())
    lines = got.mark_lines()
    assert lines["host busy"] == "host busy in 3 of 3 runs: other processes: 99 % of a core; > host_busy_pct=25"
    assert lines["smoke sizes"].startswith("smoke sizes in 3 of 3 runs: scale=smoke")


def test_a_run_that_is_not_a_launch_has_no_kind(tmp_path: Path):
    uri = store_at(tmp_path / "mlflow.db")
    store = StoreReader(uri)
    rid = compared_runs.comparison(uri, {"cpu": [1.0]})
    (phase,) = store.children(rid)
    assert kind_of(phase) == RunKind.BENCH  # a phase's scenario run is a scenario; lookup refuses it as nested
    assert kind_of(store.run((store.children(phase.run_id))[0].run_id)) == ""  # a guest


def test_a_stored_inf_is_no_figure_and_marks_the_figure_it_is_in(tmp_path: Path):
    """Hostile round C7: MLflow keeps inf as 1.797e308, which passed isfinite and was compared as "slower by 100 %"
    (a FINISHED compare run recording a ratio of 1.3e-304); two such guests summed overflowed (math range error)."""
    import math

    from suites.compare.results import NOT_A_FIGURE

    uri = store_at(tmp_path / "mlflow.db")
    store = StoreReader(uri)
    rid = compared_runs.comparison(uri, {"cpu": [100.0, math.inf, 1e300], "1-gpu": [1e-300, 400.0]})
    got = read(store, store.run(rid))
    cpu, gpu = got.figures["cpu / mnist-torch images/s"], got.figures["1-gpu / mnist-torch images/s"]
    assert cpu.values == [100.0] and NOT_A_FIGURE in cpu.marks and cpu.marks.count(NOT_A_FIGURE) == 1
    assert gpu.values == [400.0] and NOT_A_FIGURE in gpu.marks
    assert got.figures["cpu / makespan s"].marks == []  # the runs' other figures are what they were


def test_a_run_that_did_not_finish_marks_every_figure(tmp_path: Path):
    """First-time administrator: an interrupted (FAILED) mixed run given as A carried no mark at all."""
    from mlflow.tracking import MlflowClient

    uri = store_at(tmp_path / "mlflow.db")
    rid = compared_runs.comparison(uri, {"cpu": [100.0, 101.0]})
    MlflowClient(uri).set_terminated(rid, "FAILED")
    store = StoreReader(uri)
    got = read(store, store.run(rid))
    assert got.figures and all(f.marks == ["ended FAILED"] for f in got.figures.values())
    assert got.mark_lines() == {"ended FAILED": "ended FAILED: what it measured before it stopped"}


def test_a_mark_already_counted_in_its_own_words_is_not_counted_twice(tmp_path: Path):
    """Round 7: "marked: A: host busy in 1 of 3 runs: host busy in 1 of 6 runs" (a mark stored with its count)."""
    uri = store_at(tmp_path / "mlflow.db")
    store = StoreReader(uri)
    busy = read(store, store.run(compared_runs.bench(uri, 100.0, tags={
        "bench.host_busy": "host busy in 1 of 6 runs: other processes: 99 % of a core"})))
    assert busy.mark_lines() == {"host busy": "host busy: other processes: 99 % of a core"}
