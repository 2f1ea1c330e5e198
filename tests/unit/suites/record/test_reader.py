"""Tests of ``suites/record/reader.py`` on a real sqlite store (tests/support/consolidations.py records a
consolidation as the runner does): the phases read back, a run of the wrong kind refused in one line, the report's
consolidation figures from the store alone, a value that is not a number skipped and said."""

from __future__ import annotations

from pathlib import Path

import pytest

from suites import store_keys as keys
from suites.record import reader
from tests.support import consolidations
from tests.support.helpers import store_at

STEPS = {1: {"frame_ms": 40.0, "p95": 70.0, "rate": 990.0}, 2: {"frame_ms": 44.0, "p95": 90.0, "rate": 900.0}}


def recorded(tmp_path: Path) -> tuple[str, str]:
    uri = store_at(tmp_path / "mlflow.db")
    return uri, consolidations.record(uri, "e", "m60-2q", STEPS, repeats=2,
                                      tags={keys.VALIDITY_PREFIX + "m60-2q/n1": "not enforced"})


@pytest.mark.heavy
def test_a_consolidations_phases_are_read_back_every_repeat_in_run_order(tmp_path: Path):
    from mlflow.tracking import MlflowClient

    uri, rid = recorded(tmp_path)
    phases = reader.phase_numbers(MlflowClient(uri), rid)
    assert sorted(phases) == ["m60-2q/cad", "m60-2q/ml", "m60-2q/n1", "m60-2q/n2"]
    assert [len(v) for v in phases.values()] == [2, 2, 2, 2]
    assert phases["m60-2q/n2"][0].cad_frames == 200.0  # two CAD guests of 100 frames


@pytest.mark.heavy
def test_a_run_of_another_kind_or_none_is_one_lookup_error_saying_what_it_is(tmp_path: Path):
    from mlflow.tracking import MlflowClient

    uri, rid = recorded(tmp_path)
    client = MlflowClient(uri)
    assert reader.run_of_kind(client, rid, "consolidation", "--run").info.run_id == rid
    with pytest.raises(LookupError, match=f"--mixed-run {rid}: run .* is a consolidation run, not a mixed"):
        reader.run_of_kind(client, rid, "mixed", "--mixed-run")
    with pytest.raises(LookupError, match="--mixed-run 0123abcd: no such run in this store"):
        reader.run_of_kind(client, "0123abcd", "mixed", "--mixed-run")
    assert reader.latest(client, "e", "consolidation").info.run_id == rid
    assert reader.latest(client, "e", "mixed") is None and reader.latest(client, "nope", "mixed") is None


@pytest.mark.heavy
def test_the_report_reads_the_latest_consolidation_from_the_store_alone(tmp_path: Path):
    uri, rid = recorded(tmp_path)
    rep = reader.build(uri, "e")
    assert rep.sources == [rid] and rep.consolidation_profile == "m60-2q"
    assert rep.validity == {"m60-2q/n1": "not enforced"}
    assert set(rep.header) >= {"host", "GPU", "date", "git SHA"}
    assert rep.mixed == {} and "consolidation" in rep.marks


def test_a_metric_that_is_not_a_number_is_skipped_and_said():
    skipped: list[str] = []
    assert reader.numbers_only({"a": 1, "b": "abc", "c": True, "d": 2.5}, skipped) == {"a": 1.0, "d": 2.5}
    assert skipped == ["b='abc'", "c=True"]
