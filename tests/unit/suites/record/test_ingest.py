"""Tests of ``suites/record/ingest.py``."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.stores import ROOT, export, runs_in


@pytest.mark.heavy
def test_an_import_that_fails_part_way_is_rolled_back_and_a_retry_imports_it_whole(tmp_path: Path,
                                                                                 monkeypatch: pytest.MonkeyPatch):
    """A failure the checks cannot foresee (the target refuses the child's artifacts): the root copied before it
    is deleted again, so the retry is not told `already imported`."""
    from mlflow.tracking import MlflowClient

    from suites.record import ingest

    export(tmp_path)
    db = tmp_path / "team.db"
    real = MlflowClient.log_artifacts

    def refuses(self: MlflowClient, run_id: str, local_dir: str, artifact_path: str | None = None) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(MlflowClient, "log_artifacts", refuses)
    with pytest.raises(OSError, match="No space left"):
        ingest.import_export(tmp_path / "study", f"sqlite:///{db}")
    assert runs_in(db) == []
    monkeypatch.setattr(MlflowClient, "log_artifacts", real)
    done = ingest.import_export(tmp_path / "study", f"sqlite:///{db}")
    assert len(done.done) == 1 and runs_in(db) == [("part", "FINISHED"), ("study", "FINISHED")]
    assert (tmp_path / "mlartifacts").is_dir()  # beside the target store, not the working directory's outputs/


@pytest.mark.heavy
def test_a_half_import_left_by_a_killed_sync_is_replaced_by_the_retry(tmp_path: Path):
    from mlflow.tracking import MlflowClient

    from suites.record import ingest

    export(tmp_path)
    uri = f"sqlite:///{tmp_path / 'team.db'}"
    exp_id = ingest.Tracker(uri, ingest.EXPERIMENT, artifact_root=ingest.artifact_root(uri)).experiment_id
    MlflowClient(uri).create_run(exp_id, run_name="study", tags={"bench.imported_from": ROOT,
                                                                 ingest.IMPORT_OF: ROOT})  # never marked done
    assert len(ingest.import_export(tmp_path / "study", uri).done) == 1
    assert runs_in(tmp_path / "team.db") == [("part", "FINISHED"), ("study", "FINISHED")]
