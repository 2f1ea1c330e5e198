"""A run tree as plain files, so results can travel from a GPU host with no network to the team's store.

:func:`export_tree` writes a run and every run nested below it (tags,
params, latest metric values, times, status, artifacts) to
``<dir>/mlflow-export/``: ``runs.json`` and ``artifacts/<run id>/``.
``make study`` writes one beside its report, so the study directory (a
tarball of it) is all a GPU host needs to send back. :class:`ExportedStore`
reads it with the few MlflowClient calls :mod:`suites.record.sync` copies
runs with, so importing it (``python -m suites.app.sync --run-dir DIR``) is
the same copy as a fallback store's import.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from types import SimpleNamespace
from typing import Any

EXPORT_DIR = "mlflow-export"


def subtree(client: Any, run_id: str) -> list[Any]:
    """The run and every run nested below it, parents first."""
    root = client.get_run(run_id)
    out, frontier = [root], [root]
    while frontier:
        run = frontier.pop(0)
        children = client.search_runs([run.info.experiment_id], f"tags.mlflow.parentRunId = '{run.info.run_id}'",
                                      max_results=5000, order_by=["attributes.start_time ASC"])
        out += children
        frontier += children
    return out


def export_tree(tracking_uri: str, run_id: str, folder: Path) -> Path:
    """``folder``/mlflow-export/ holding the run tree; the export directory."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri)
    dest = folder / EXPORT_DIR
    shutil.rmtree(dest, ignore_errors=True)
    (dest / "artifacts").mkdir(parents=True)
    records = []
    for run in subtree(client, run_id):
        rid = run.info.run_id
        records.append({"run_id": rid, "run_name": run.info.run_name, "status": run.info.status,
                        "start_time": run.info.start_time, "end_time": run.info.end_time,
                        "tags": dict(run.data.tags), "params": dict(run.data.params),
                        "metrics": dict(run.data.metrics)})
        if client.list_artifacts(rid):
            client.download_artifacts(rid, "", str(dest / "artifacts" / rid))
    (dest / "runs.json").write_text(json.dumps({"format": "gpu-mixed-bench/run-export", "version": 1,
                                                "root": run_id, "runs": records}, indent=1))
    return dest


class ExportedStore:
    """An export read back with the MlflowClient calls a run copy needs (get_run, search, artifacts)."""

    def __init__(self, folder: Path) -> None:
        path = folder / EXPORT_DIR / "runs.json" if (folder / EXPORT_DIR).is_dir() else folder / "runs.json"
        if not path.is_file():
            raise FileNotFoundError(f"no {EXPORT_DIR}/runs.json in {folder} (make study writes one per study)")
        doc = json.loads(path.read_text())
        if doc.get("format") != "gpu-mixed-bench/run-export" or doc.get("version") != 1:
            raise ValueError(f"{path}: not a gpu-mixed-bench run export (version 1)")
        self.root_id: str = doc["root"]
        self.artifacts = path.parent / "artifacts"
        self.runs = [SimpleNamespace(info=SimpleNamespace(run_id=r["run_id"], run_name=r["run_name"],
                                                          status=r["status"], start_time=r["start_time"],
                                                          end_time=r["end_time"]),
                                     data=SimpleNamespace(tags=r["tags"], params=r["params"], metrics=r["metrics"]))
                     for r in doc["runs"]]

    @property
    def root(self) -> Any:
        return next(r for r in self.runs if r.info.run_id == self.root_id)

    def list_artifacts(self, run_id: str) -> list[Path]:
        folder = self.artifacts / run_id
        return sorted(folder.iterdir()) if folder.is_dir() else []

    def download_artifacts(self, run_id: str, path: str, dst: str) -> str:
        return str(shutil.copytree(self.artifacts / run_id / path, Path(dst) / run_id))
