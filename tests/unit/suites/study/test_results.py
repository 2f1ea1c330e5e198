"""Tests of ``suites/study/results.py`` on a real sqlite store: a study read back from its runs alone (its parts,
its skips, the header of its first part), the latest study found, a run of another kind refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from suites import store_keys as keys
from suites.run_kinds import RunKind
from suites.study import results
from tests.support.helpers import store_at


def a_study(uri: str, skips: str) -> tuple[str, str]:
    """A study run with one gpu-vs-cpu part under it (and a phase under that, as the runner nests them)."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient(uri)
    exp = client.create_experiment("e")
    study = client.create_run(exp, tags={keys.KIND: RunKind.STUDY, keys.SKIPS: skips}).info.run_id
    client.log_param(study, "study.budget_s", "480")
    part = client.create_run(exp, tags={"mlflow.parentRunId": study, keys.STUDY_PART: "gpu-vs-cpu",
                                        keys.KIND: "comparison", keys.validity_of("cpu"): "enforced"}).info.run_id
    client.log_metric(part, "cpu.time_x", 10.06)
    phase = client.create_run(exp, tags={"mlflow.parentRunId": part, keys.PHASE: "cpu"}).info.run_id
    client.log_param(phase, "host.hostname", "here")
    for run in (phase, part, study):
        client.set_terminated(run)
    return study, part


def test_a_study_is_read_back_from_its_runs_alone(tmp_path: Path):
    uri = store_at(tmp_path / "mlflow.db")
    study, part = a_study(uri, json.dumps([["scaling", "2-gpu needs 2 GPUs; host has no GPU"]]))
    assert results.latest_study(uri, "e") == study
    got = results.read_study(uri, "e", study)
    assert got.params == {"study.budget_s": "480"} and list(got.parts) == ["gpu-vs-cpu"]
    assert got.parts["gpu-vs-cpu"].run_id == part and got.parts["gpu-vs-cpu"].metrics == {"cpu.time_x": 10.06}
    assert got.skips == [("scaling", "2-gpu needs 2 GPUs; host has no GPU")]
    assert got.header["host"].startswith("here")
    with pytest.raises(LookupError, match="is a comparison run, not a study comparison"):
        results.read_study(uri, "e", part)
    assert results.latest_study(uri, "no such experiment") is None


def test_a_skip_list_cut_by_the_stores_tag_length_is_said_not_a_traceback(tmp_path: Path):
    uri = store_at(tmp_path / "mlflow.db")
    study, _ = a_study(uri, '[["scaling", "2-gpu ne')
    assert results.read_study(uri, "e", study).skips == [
        ("skip list", "not readable from the store (tag bench.skips truncated)")]


def test_a_study_killed_before_its_first_part_says_so_not_nothing_skipped(tmp_path: Path):
    """Hostile round: SIGKILL mid-study, then `make report --study`: header '?', 'Skipped on this host: nothing',
    as if the study had ended. Its run, ended KILLED by the next command (suites/record/owed.py), says it stopped."""
    from mlflow.tracking import MlflowClient

    from suites.study import report

    uri = store_at(tmp_path / "mlflow.db")
    client = MlflowClient(uri)
    exp = client.create_experiment("e")
    study = client.create_run(exp, tags={keys.KIND: RunKind.STUDY, keys.STOPPED: "the runner was killed"})
    client.set_terminated(study.info.run_id, "KILLED")
    got = results.read_study(uri, "e", study.info.run_id)
    said = report.banner(got) or ""
    assert said.startswith("STUDY KILLED, NOT ENDED: the runner was killed. 0 part(s) recorded"), said
    text = report.markdown(got, [])
    assert "- nothing" not in text and "- not known: the study did not end" in text
    assert "date: " in text  # the study run's own, where no part's is there
    assert report.ended_early(results.ReferenceStudy("x", {})) == ""  # one that ran to its end: nothing said
