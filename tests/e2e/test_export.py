"""A run tree's export (make study's and gpu-check's mlflow-export/) copies each run's artifacts without MLflow's
progress bars: on an H200 they were 40 lines of 'Downloading artifacts' in gpu-check's output and the study's log."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from suites.record.export import PROGRESS_BAR, export_tree


def a_run_with_artifacts(tmp_path: Path) -> tuple[str, str]:
    from mlflow.tracking import MlflowClient

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client = MlflowClient(uri)
    exp = client.create_experiment("e", artifact_location=str(tmp_path / "artifacts"))
    run = client.create_run(exp).info.run_id
    for name in ("a.txt", "b.txt"):
        (tmp_path / name).write_text(name)
        client.log_artifact(run, str(tmp_path / name))
    client.set_terminated(run)
    return uri, run


def test_export_copies_artifacts_with_mlflows_progress_bar_off_and_leaves_the_environment_as_it_was(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """MLflow draws its bar only where tqdm is installed (the GPU image has it, this venv not): what it is told
    while it copies is checked."""
    from mlflow.tracking import MlflowClient

    told = []
    real = MlflowClient.download_artifacts

    def download(self: MlflowClient, *args: object, **kwargs: object) -> str:
        told.append(os.environ.get(PROGRESS_BAR))
        return real(self, *args, **kwargs)

    monkeypatch.setattr(MlflowClient, "download_artifacts", download)
    monkeypatch.delenv(PROGRESS_BAR, raising=False)
    uri, run = a_run_with_artifacts(tmp_path)
    dest = export_tree(uri, run, tmp_path / "out")
    assert (dest / "artifacts" / run / "a.txt").read_text() == "a.txt"
    assert told == ["false"] and PROGRESS_BAR not in os.environ
    monkeypatch.setenv(PROGRESS_BAR, "true")  # the user's own setting is theirs
    export_tree(uri, run, tmp_path / "again")
    assert told == ["false", "true"] and os.environ[PROGRESS_BAR] == "true"


def test_a_checks_runs_are_adopted_under_the_gpu_check_run_tagged_with_the_check(tmp_path: Path):
    """make gpu-check's store after a check: every top-level run but the gpu-check run nested under it, tagged with
    the check that made it; a run adopted once is not adopted again."""
    from mlflow.tracking import MlflowClient

    from suites import store_keys as keys
    from suites.record.export import adopt_roots, export_tree, read_export

    uri, first = a_run_with_artifacts(tmp_path)
    client = MlflowClient(uri)
    parent = client.create_run(client.get_run(first).info.experiment_id, tags={keys.KIND: "gpu-check"}).info.run_id
    assert adopt_roots(uri, parent, {keys.CHECK_PART: "b1"}) == 1
    assert adopt_roots(uri, parent, {keys.CHECK_PART: "b2"}) == 0  # nothing new: b1's run stays b1's
    tags = client.get_run(first).data.tags
    assert tags["mlflow.parentRunId"] == parent and tags[keys.CHECK_PART] == "b1"
    export_tree(uri, parent, tmp_path / "out")
    exported = read_export(tmp_path / "out" / "mlflow-export" / "runs.json")["runs"]
    assert {r["run_id"] for r in exported} >= {parent, first}


def test_an_export_after_each_part_reads_only_what_is_new_and_the_final_one_reads_the_whole_tree(tmp_path: Path,
                                                                                                  monkeypatch):
    """A campaign exports after each part: a run that had ended when one export read it is taken from that export
    (its record as read, its files linked), never read from the store again; one still running is read each time;
    an export without the cache (the campaign's last) reads every run again."""
    from mlflow.tracking import MlflowClient

    from suites import store_keys as keys
    from suites.record.export import read_export

    uri, ended = a_run_with_artifacts(tmp_path)
    client = MlflowClient(uri)
    exp = client.get_run(ended).info.experiment_id
    parent = client.create_run(exp).info.run_id  # the campaign's run: RUNNING until its end
    client.set_tag(ended, keys.PARENT, parent)
    read: list[str] = []
    real = MlflowClient.search_runs
    monkeypatch.setattr(MlflowClient, "search_runs", lambda self, ids, filter_string, **kw: (
        read.append(filter_string.split("'")[1]) or real(self, ids, filter_string, **kw)))
    known: dict = {}
    first = export_tree(uri, parent, tmp_path / "run", known)
    assert read == [parent, ended] and set(known) == {ended}
    inode = (first / "artifacts" / ended / "a.txt").stat().st_ino
    client.set_tag(ended, "changed", "after its end")  # an ended run a later part's export does not read again
    late = client.create_run(exp, tags={keys.PARENT: parent}).info.run_id
    client.set_terminated(late)
    read.clear()
    again = export_tree(uri, parent, tmp_path / "run", known)
    assert read == [parent, late] and set(known) == {ended, late}
    assert (again / "artifacts" / ended / "a.txt").stat().st_ino == inode  # linked from the export before
    runs = {r["run_id"]: r for r in read_export(again / "runs.json")["runs"]}
    assert set(runs) == {parent, ended, late} and "changed" not in runs[ended]["tags"]
    assert runs[parent]["status"] == "FAILED" and runs[parent]["tags"][keys.EXPORTED_RUNNING]  # cut off, said
    read.clear()
    final = export_tree(uri, parent, tmp_path / "run")
    assert sorted(read) == sorted([parent, ended, late])
    runs = {r["run_id"]: r for r in read_export(final / "runs.json")["runs"]}
    assert runs[ended]["tags"]["changed"] == "after its end"
    assert (final / "artifacts" / ended / "b.txt").read_text() == "b.txt"
