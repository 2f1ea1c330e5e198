"""Run exports (as make study writes them) and the sync command, and git's view of the tree (nothing written into
it)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.support.helpers import REPO


def git_status() -> str:
    return subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=REPO, capture_output=True,
                          text=True, check=True).stdout


def export_doc() -> dict:
    """A run export as `make study` writes one (suites/record/export.py): a parent run and one nested run."""
    run = {"run_id": "a" * 32, "run_name": "study", "status": "FINISHED", "start_time": 1_700_000_000_000,
           "end_time": 1_700_000_060_000, "tags": {"bench.kind": "study"}, "params": {"tier": "smoke"},
           "metrics": {"elapsed_s": 60.0}}
    child = {**json.loads(json.dumps(run)), "run_id": "b" * 32, "run_name": "part",
             "tags": {"mlflow.parentRunId": "a" * 32}}
    return {"format": "gpu-mixed-bench/run-export", "version": 1, "root": "a" * 32, "runs": [run, child]}


def sync(folder: Path, db: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "suites.commands.sync", "--run-dir", str(folder), "--to",
                           f"sqlite:///{db}"], cwd=REPO, capture_output=True, text=True, timeout=300)


ROOT, CHILD = "a" * 32, "b" * 32


def export(tmp_path: Path, doc: dict | None = None) -> Path:
    folder = tmp_path / "study" / "mlflow-export"
    (folder / "artifacts" / CHILD).mkdir(parents=True, exist_ok=True)
    (folder / "artifacts" / CHILD / "notes.txt").write_text("a part's notes\n")
    (folder / "runs.json").write_text(json.dumps(doc or export_doc()))
    return folder


def runs_in(db: Path) -> list[tuple[str, str]]:
    """(run name, status) of every active run in store ``db``."""
    from mlflow.tracking import MlflowClient

    if not db.exists():
        return []
    client = MlflowClient(f"sqlite:///{db}")
    exps = [e.experiment_id for e in client.search_experiments()]
    return sorted((r.info.run_name, r.info.status) for r in client.search_runs(exps))


def mlflow_runs(uri: str) -> list:
    from mlflow.tracking import MlflowClient

    client = MlflowClient(uri)
    return client.search_runs([client.get_experiment_by_name("gpu-mixed-bench").experiment_id])
