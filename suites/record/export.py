"""A run tree as plain files, so results can travel from a GPU host with no network to the team's store.

:func:`export_tree` writes a run and every run nested below it (tags,
params, latest metric values, times, status, artifacts) to
``<dir>/mlflow-export/``: ``runs.json`` and ``artifacts/<run id>/``.
``make study`` writes one beside its report, so the study directory (a
tarball of it) is all a GPU host needs to send back. :class:`ExportedStore`
reads it with the few MlflowClient calls :mod:`suites.record.ingest` copies
runs with, so importing it (``python -m suites sync --run-dir DIR``) is
the same copy as a fallback store's import.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from gpu_probe.shapes import JsonObject
from suites import store_keys as keys
from suites.record.store import MAX_PARAM_LEN, MAX_TAG_LEN

EXPORT_DIR = "mlflow-export"


ENDED = ("FINISHED", "FAILED", "KILLED")
# run id -> (its exported record, its children's ids), for a run that had ended when an export read it
Known = dict[str, tuple[JsonObject, list[str]]]


def records(client: Any, run_id: str, known: Known) -> Iterator[tuple[JsonObject, bool]]:
    """(record, read now) for the run and every run nested below it, parents first. A run ``known`` holds is not
    read again nor searched for children: a campaign exports after each part, and its ended parts' runs do not
    change; an ended run read now joins ``known``."""
    frontier: list[tuple[str, Any]] = [(run_id, None)]
    while frontier:
        rid, run = frontier.pop(0)
        if rid in known:
            record, kids = known[rid]
            frontier += [(k, None) for k in kids]
            yield record, False
            continue
        run = run or client.get_run(rid)
        children = client.search_runs([run.info.experiment_id], keys.children_filter(rid), max_results=5000,
                                      order_by=["attributes.start_time ASC"])
        record = record_of(run)
        if run.info.status in ENDED:
            known[rid] = (record, [c.info.run_id for c in children])
        frontier += [(c.info.run_id, c) for c in children]
        yield record, True


def record_of(run: Any) -> JsonObject:
    """One run as the export holds it; a run still RUNNING is exported as cut off, never running."""
    tags, status = dict(run.data.tags), run.info.status
    if status == "RUNNING":  # exported mid-way (a study between its parts): imported as cut off, never running
        status, tags[EXPORTED_RUNNING] = "FAILED", EXPORTED_RUNNING_WHY
    return {"run_id": run.info.run_id, "run_name": run.info.run_name, "status": status,
            "start_time": run.info.start_time, "end_time": run.info.end_time,
            "tags": tags, "params": dict(run.data.params), "metrics": dict(run.data.metrics)}


PROGRESS_BAR = "MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR"


@contextlib.contextmanager
def quiet_downloads() -> Iterator[None]:
    """MLflow draws a progress bar for each run's artifacts it copies (tens of lines in a study's or gpu-check's
    log); off while the suite copies them, unless the user set the variable."""
    if PROGRESS_BAR in os.environ:
        yield
        return
    os.environ[PROGRESS_BAR] = "false"
    try:
        yield
    finally:
        os.environ.pop(PROGRESS_BAR, None)


def export_tree(tracking_uri: str, run_id: str, folder: Path, known: Known | None = None) -> Path:
    """``folder``/mlflow-export/ holding the run tree; the export directory. With ``known`` (kept by the caller
    between its exports of one tree), the runs an earlier export read ended are taken from it and their artifacts
    linked from that export: each export reads only what is new, not the whole tree again."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri)
    dest = folder / EXPORT_DIR
    building = folder / f"{EXPORT_DIR}.partial-{os.getpid()}"  # the last whole export stays until this one is
    shutil.rmtree(building, ignore_errors=True)
    (building / "artifacts").mkdir(parents=True)
    known = {} if known is None else known
    if not (dest / "runs.json").is_file():  # what the cache names is taken from an earlier export, still whole
        known.clear()
    out = []
    for record, read in records(client, run_id, known):
        rid, into = record["run_id"], building / "artifacts" / record["run_id"]
        out.append(record)
        if not read:  # the earlier export's files of an ended run, linked, not copied again
            if (dest / "artifacts" / rid).is_dir():
                shutil.copytree(dest / "artifacts" / rid, into, copy_function=link_or_copy)
        elif client.list_artifacts(rid):
            with quiet_downloads():
                client.download_artifacts(rid, "", str(into))
    (building / "runs.json").write_text(json.dumps({"format": "gpu-mixed-bench/run-export", "version": 1,
                                                    "root": run_id, "runs": out}, indent=1))
    old = folder / f"{EXPORT_DIR}.old-{os.getpid()}"
    if dest.exists():
        dest.rename(old)
    building.rename(dest)
    shutil.rmtree(old, ignore_errors=True)
    return dest


def link_or_copy(src: str, dst: str) -> None:
    """A hard link where the file system makes one (the same folder's disk), a copy where it does not."""
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)


EXPORTED_RUNNING = keys.EXPORTED_RUNNING
EXPORTED_RUNNING_WHY = ("still running when exported: what was exported is what had finished by then; a later "
                        "export of the finished run replaces this one")


class ExportedStore:
    """An export read back with the MlflowClient calls a run copy needs (get_run, search, artifacts)."""

    def __init__(self, folder: Path) -> None:
        path = folder / EXPORT_DIR / "runs.json" if (folder / EXPORT_DIR).is_dir() else folder / "runs.json"
        if not path.is_file():
            raise FileNotFoundError(f"no {EXPORT_DIR}/runs.json in {folder} (make study writes one per study)")
        doc = read_export(path)
        self.root_id: str = doc["root"]
        self.artifacts = path.parent / "artifacts"
        check_artifacts(self.artifacts, [r["run_id"] for r in doc["runs"]])
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


# An export is checked whole before anything of it is imported: one edited by hand (truncated, a wrong type, an
# oversized field, a run id that is a path) is one line naming the file and the field, and nothing is imported half.
EXPORT_MAX_BYTES = 64 * 2**20
RUN_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")  # MLflow's are 32 hex digits; never a path
STATUSES = ("RUNNING", "SCHEDULED", "FINISHED", "FAILED", "KILLED")
TEXT_MAX = {"tags": MAX_TAG_LEN, "params": MAX_PARAM_LEN}
EPOCH_MS = (946_684_800_000, 4_102_444_800_000)  # 2000-01-01 to 2100-01-01: what a recorded run's clock says


def adopt_roots(tracking_uri: str, parent_id: str, tags: dict[str, str]) -> int:
    """Every top-level run of the parent's experiment but the parent nested under it, with ``tags``: what ``make
    gpu-check`` does after each check with the runs its commands recorded into its store (each a root run of its
    own process). How many it took."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri)
    exp_id = client.get_run(parent_id).info.experiment_id
    top = [r for r in client.search_runs([exp_id], max_results=10000)
           if keys.PARENT not in r.data.tags and r.info.run_id != parent_id]
    for r in top:
        client.set_tag(r.info.run_id, keys.PARENT, parent_id)
        for k, v in tags.items():
            client.set_tag(r.info.run_id, k, v[:MAX_TAG_LEN])
    return len(top)


def read_export(path: Path) -> JsonObject:
    """``runs.json`` parsed and checked field by field; ValueError naming the file and the first bad field."""
    if path.stat().st_size > EXPORT_MAX_BYTES:
        raise ValueError(f"{path}: {path.stat().st_size / 2**20:.0f} MiB, more than an export of runs holds "
                         f"({EXPORT_MAX_BYTES // 2**20} MiB)")
    try:
        doc = json.loads(path.read_text())
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path}: not JSON ({exc}): truncated or edited?") from None
    if not isinstance(doc, dict) or doc.get("format") != "gpu-mixed-bench/run-export" or doc.get("version") != 1:
        raise ValueError(f"{path}: not a gpu-mixed-bench run export (version 1)")
    runs = doc.get("runs")
    if not isinstance(runs, list) or not runs:
        raise ValueError(f"{path}: runs: must be a non-empty list")
    first: dict[str, int] = {}
    for i, run in enumerate(runs):
        problem = run_problem(run)
        if problem:
            raise ValueError(f"{path}: runs[{i}].{problem}")
        if run["run_id"] in first:  # an export lists each run once: a second entry is an edit, not a run
            raise ValueError(f"{path}: runs[{i}].run_id: {run['run_id']} is listed twice (runs[{first[run['run_id']]}] "
                             "too): edited or merged by hand?")
        first[run["run_id"]] = i
    if doc.get("root") not in {r["run_id"] for r in runs}:
        raise ValueError(f"{path}: root: {str(doc.get('root'))[:80]!r} is not one of its runs")
    return doc


def run_problem(run: Any) -> str:
    """'<field>: <why>' for the first field of one exported run that a real export could not hold; '' if none."""
    if not isinstance(run, dict):
        return "(run): must be an object"
    if not isinstance(run.get("run_id"), str) or not RUN_ID.match(run["run_id"]):
        return f"run_id: {str(run.get('run_id'))[:80]!r} is not a run id"
    if run.get("status") not in STATUSES:
        return f"status: must be one of {', '.join(STATUSES)}"
    if run.get("run_name") is not None and not isinstance(run["run_name"], str):
        return "run_name: must be text"
    for key in ("start_time", "end_time"):
        if run.get(key) is not None and (not isinstance(run[key], int) or isinstance(run[key], bool)
                                         or not EPOCH_MS[0] <= run[key] <= EPOCH_MS[1]):
            return f"{key}: must be epoch milliseconds (2000 to 2100), got {str(run[key])[:40]}"
    for key, limit in TEXT_MAX.items():
        values = run.get(key)
        if not isinstance(values, dict):
            return f"{key}: must be an object"
        bad = next((k for k, v in values.items() if not isinstance(v, str) or len(v) > limit), None)
        if bad is not None:
            return f"{key}.{bad}: must be text of at most {limit} characters"
    metrics = run.get("metrics")
    if not isinstance(metrics, dict):
        return "metrics: must be an object"
    bad = next((k for k, v in metrics.items() if not isinstance(v, (int, float)) or isinstance(v, bool)), None)
    return f"metrics.{bad}: must be a number" if bad is not None else ""


def check_artifacts(folder: Path, run_ids: list[str]) -> None:
    """Every artifact is a plain file of the export: an export holds files only (MLflow's artifacts are), and an
    import would copy what a link points at (a link out of it), or follow a link loop inside it without end."""
    for level in (folder, *(folder / rid for rid in run_ids)):  # a link at these levels: every file under it
        if level.is_symlink():  # would be taken from where it points, though no file below is a link itself
            raise ValueError(f"{level}: a link ({level.resolve(strict=False)}), not the export's own folder; "
                             "not imported")
    root = folder.resolve()
    for rid in run_ids:
        for path in (folder / rid).rglob("*") if (folder / rid).is_dir() else []:
            if path.is_symlink():
                where = path.resolve(strict=False)
                raise ValueError(f"{path}: a link out of the export ({where}); not imported"
                                 if root not in where.parents else "a link inside the export (it holds files "
                                 f"only; not imported): {path.relative_to(folder.parent)} -> {where.name}")
