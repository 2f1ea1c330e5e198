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
