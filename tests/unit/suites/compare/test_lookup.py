"""Tests of ``suites/compare/lookup.py``: a run given by id or by its run directory, the two newest of a kind on
this machine, and A and B refused where they cannot be compared."""

from __future__ import annotations

from pathlib import Path

import pytest

from suites.compare import conclude, lookup
from suites.compare.results import read
from suites.record.store_reader import StoreReader
from tests.support import compared_runs
from tests.support.helpers import store_at

EXP = "gpu-mixed-bench"
MACHINE = "bench-host | Test CPU | 2 | no GPU"


def test_a_run_is_found_by_its_id_or_by_its_run_directorys_name(tmp_path: Path):
    uri = store_at(tmp_path / "mlflow.db")
    rid = compared_runs.bench(uri, 100.0, name="2026-11-28_06-00-00.000-42")
    folder = tmp_path / "runs" / "2026-11-28_06-00-00.000-42"
    folder.mkdir(parents=True)
    store = StoreReader(uri)
    assert lookup.resolve(store, EXP, rid).run_id == rid == lookup.resolve(store, EXP, str(folder)).run_id
    with pytest.raises(LookupError, match=r"no run of experiment 'gpu-mixed-bench' is named after this run dir"):
        lookup.resolve(store, EXP, str(tmp_path))
    with pytest.raises(LookupError, match=r"neither a run directory nor an MLflow run id"):
        lookup.resolve(store, EXP, "no/such/folder")
    with pytest.raises(LookupError, match=r"^0123456789abcdef: no such run in this store"):
        lookup.resolve(store, EXP, "0123456789abcdef")


def test_a_nested_run_is_refused_saying_what_it_is(tmp_path: Path):
    uri = store_at(tmp_path / "mlflow.db")
    store = StoreReader(uri)
    rid = compared_runs.comparison(uri, {"cpu": [1.0]})
    guest = store.children(store.children(rid)[0].run_id)[0]
    with pytest.raises(LookupError, match=r"is a guest run; compare takes a bench, comparison, study or sizing run"):
        lookup.resolve(store, EXP, guest.run_id)


@pytest.mark.heavy
def test_latest_takes_the_two_newest_of_a_kind_on_this_machine_older_first(tmp_path: Path):
    uri = store_at(tmp_path / "mlflow.db")
    first = compared_runs.bench(uri, 100.0)
    compared_runs.bench(uri, 100.0, {"host.hostname": "another"})  # not this machine: skipped
    second = compared_runs.bench(uri, 90.0)
    compared_runs.comparison(uri, {"cpu": [1.0]})  # the newest, but a comparison
    store = StoreReader(uri)
    a, b = lookup.latest(store, EXP, MACHINE, "bench")
    assert (a.run.run_id, b.run.run_id) == (first, second)
    with pytest.raises(LookupError, match=r"--latest: 1 comparison run\(s\) of this machine"):  # no 'scenario ?'
        lookup.latest(store, EXP, MACHINE, "")
    with pytest.raises(LookupError, match=r"--latest runs: a kind is one of bench, comparison, study, sizing"):
        lookup.latest(store, EXP, MACHINE, "runs")


def test_latest_pairs_a_comparison_with_one_of_its_own_scenario_never_another(tmp_path: Path):
    """A first-time administrator's nightly gate: `make compare LATEST=1` paired a gpu-vs-cpu run with the mixed
    run made in between and exited 2 ("hold no figure in common"): a false alarm by mail."""
    uri = store_at(tmp_path / "mlflow.db")
    older = compared_runs.comparison(uri, {"cpu": [1.0]}, tags={"bench.scenario": "gpu-vs-cpu"})
    compared_runs.comparison(uri, {"cad": [1.0]}, tags={"bench.scenario": "mixed"})
    newer = compared_runs.comparison(uri, {"cpu": [1.1]}, tags={"bench.scenario": "gpu-vs-cpu"})
    store = StoreReader(uri)
    for kind in ("", "comparison"):
        a, b = lookup.latest(store, EXP, MACHINE, kind)
        assert (a.run.run_id, b.run.run_id) == (older, newer)
    compared_runs.comparison(uri, {"cad": [1.0]}, tags={"bench.scenario": "consolidation"})
    with pytest.raises(LookupError, match=r"--latest: 1 comparison run\(s\) of scenario consolidation of this"):
        lookup.latest(store, EXP, MACHINE, "")


def test_runs_of_different_kinds_or_with_nothing_in_common_are_one_line(tmp_path: Path):
    uri = store_at(tmp_path / "mlflow.db")
    store = StoreReader(uri)
    bench = read(store, store.run(compared_runs.bench(uri, 100.0)))
    cmp_a = read(store, store.run(compared_runs.comparison(uri, {"cpu": [1.0, 1.1]})))
    cmp_b = read(store, store.run(compared_runs.comparison(uri, {"gpu": [1.0, 1.1]})))
    with pytest.raises(LookupError, match=r"is a bench run and B .* a comparison run: compare runs of one kind"):
        conclude.compare(bench, cmp_a, 5.0, None)
    with pytest.raises(LookupError, match=r"hold no figure in common \(A: cpu / makespan s"):
        conclude.compare(cmp_a, cmp_b, 5.0, None)


def test_two_sizings_show_each_profiles_n_and_the_recommendation_as_changed_or_same(tmp_path: Path):
    from suites.compare import report

    uri = store_at(tmp_path / "mlflow.db")
    store = StoreReader(uri)
    a = read(store, store.run(compared_runs.sizing(uri, {"m60-2q": (2, 3), "m60-4q": (1, 1)}, "m60-2q: 3 per GPU")))
    b = read(store, store.run(compared_runs.sizing(uri, {"m60-2q": (3, 4), "m60-4q": (1, 1)}, "m60-2q: 4 per GPU")))
    rows = report.answer_rows(conclude.compare(a, b, 5.0, None))
    assert ["m60-2q N safe..point", "2..3", "3..4", "changed"] in rows
    assert ["m60-4q N safe..point", "1..1", "1..1", "same"] in rows
    assert ["recommendation", "m60-2q: 3 per GPU", "m60-2q: 4 per GPU", "changed"] in rows
    assert ["recommended profile", "m60-2q", "m60-2q", "same"] in rows
    assert ["what binds it", "GPU time (safe), GPU time (point)", "GPU time (safe), GPU time (point)", "same"] in rows
    assert conclude.compare(a, b, 5.0, None).setup == []  # the answer is no set-up


@pytest.mark.heavy
def test_a_study_against_a_study_sets_each_parts_phases_side_by_side(tmp_path: Path):
    uri = store_at(tmp_path / "mlflow.db")
    store = StoreReader(uri)
    parts = {"episode1-gpu-vs-cpu": {"cpu": [100.0, 101.0, 99.0]}, "episode2-mixed": {"m60-8q/ml": [50.0, 51.0]}}
    a = read(store, store.run(compared_runs.study(uri, parts)))
    slower = {**parts, "episode1-gpu-vs-cpu": {"cpu": [80.0, 81.0, 79.0]}}
    b = read(store, store.run(compared_runs.study(uri, slower)))
    verdict = {c.name: c.verdict for c in conclude.compare(a, b, 5.0, None).changes}
    assert verdict["episode1-gpu-vs-cpu / cpu / mnist-torch images/s"] == "slower"
    assert verdict["episode2-mixed / m60-8q/ml / mnist-torch images/s"] in ("no change", "no spread") or \
        verdict["episode2-mixed / m60-8q/ml / mnist-torch images/s"].startswith("inconclusive")


@pytest.mark.heavy
def test_latest_finds_sizings_whose_own_run_holds_no_host_by_their_scenario_runs(tmp_path: Path):
    """Round 7: `compare --latest sizing` found 0 of 3 sizings: a sizing's own run records its answer, and the host it
    ran on only in its consolidations' scenario runs."""
    import time

    uri = store_at(tmp_path / "mlflow.db")
    client, exp = compared_runs.client_of(uri, EXP)
    made = []
    for _ in range(2):
        rid = client.create_run(exp, tags={"bench.role": "sizing", "bench.kind": "sizing",
                                           "bench.answer": "m60-2q: 2 per GPU"}).info.run_id
        client.log_metric(rid, "m60-2q.n_safe", 2.0)
        compared_runs.scenario(client, exp, 100.0, {**compared_runs.HOST, "workload": "fixed-step"},
                               {"mlflow.parentRunId": rid, "bench.consolidation": "m60-2q"})
        client.set_terminated(rid, "FINISHED")
        made.append(rid)
        time.sleep(0.002)
    a, b = lookup.latest(StoreReader(uri), EXP, MACHINE, "sizing")
    assert (a.run.run_id, b.run.run_id) == tuple(made)


def test_a_run_directory_several_runs_name_is_refused_never_one_picked_in_silence(tmp_path: Path):
    uri = store_at(tmp_path / "mlflow.db")
    folder = tmp_path / "runs" / "2026-11-28_06-00-00.000-42"
    folder.mkdir(parents=True)
    made = [compared_runs.bench(uri, 100.0, tags={"bench.run_dir": str(folder.resolve())}) for _ in range(3)]
    with pytest.raises(LookupError, match=rf"3 runs of experiment 'gpu-mixed-bench' name this run directory \(newest "
                                          rf"first: {made[2]}, {made[1]}, {made[0]}\): give the run id"):
        lookup.resolve(StoreReader(uri), EXP, str(folder))
