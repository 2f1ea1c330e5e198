"""Import runs recorded while a store was down (``python -m suites sync``).

A top-level run recorded in the fallback store carries ``bench.fallback_for``;
this copies each such run with its whole subtree of nested runs (tags,
params, latest metric values, artifacts, status) into the target store, then
tags the source run ``bench.imported_to`` so a second import copies nothing
twice.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeAlias

from suites import store_keys as keys
from suites.config.schema import ARTIFACT_DIR, EXPERIMENT
from suites.errors import redact
from suites.record.export import ExportedStore, quiet_downloads
from suites.record.store import Tracker, log_batch, sqlite_path

# an MlflowClient or an export read back (ExportedStore, which answers the same calls), or a run of either
Mlflow: TypeAlias = Any

SKIP_TAGS = ("mlflow.parentRunId", "mlflow.user", "mlflow.source.name", "mlflow.source.type", "mlflow.runName")


def existing(client: Mlflow, run_id: str | None) -> str | None:
    if not run_id:
        return None
    try:
        return client.get_run(run_id).info.run_id
    except Exception:  # not in this store (imported elsewhere, deleted)
        return None


@dataclass
class Copying:
    """One import under way: from ``src`` (a client, or an export read back) into ``dst``'s experiment ``exp_id``,
    the source's ``runs`` (where a run's children are found), the tags every copy carries (which import made it),
    and the runs it made in the target (deleted again if it fails: all or nothing)."""

    src: Mlflow
    dst: Mlflow
    runs: list[Mlflow]
    exp_id: str
    mark: dict[str, str] = field(default_factory=dict)
    made: list[str] = field(default_factory=list)

    def undo(self) -> None:
        for run_id in reversed(self.made):  # deleted runs are out of every search: a retry imports afresh
            try:
                self.dst.delete_run(run_id)
            except Exception:  # noqa: S110 - the store that failed the import may refuse this too; said by the caller
                pass


def copy_run(copying: Copying, run: Mlflow, parent: str | None, into: str | None) -> str:
    """A copy of ``run`` in the target (or its data written into the existing run ``into``), counted in
    ``copying``."""
    src, dst = copying.src, copying.dst
    tags = {k: v for k, v in run.data.tags.items() if k not in SKIP_TAGS and k != keys.IMPORTED_TO}
    tags.update(copying.mark)
    if parent:
        tags["mlflow.parentRunId"] = parent
    if into:
        new = into
        log_batch(dst, new, tags=tags)
    else:
        new = dst.create_run(copying.exp_id, start_time=run.info.start_time, tags=tags,
                             run_name=run.info.run_name).info.run_id
        copying.made.append(new)
    have = dst.get_run(new).data.params if into else {}
    params = {k: v for k, v in run.data.params.items() if k not in have}  # logged before the store died
    log_batch(dst, new, params=params, metrics=dict(run.data.metrics), timestamp_ms=run.info.start_time or 0,
              tags={keys.IMPORTED_FROM: run.info.run_id})
    with tempfile.TemporaryDirectory() as tmp:
        if src.list_artifacts(run.info.run_id):
            with quiet_downloads():
                local = src.download_artifacts(run.info.run_id, "", tmp)
            dst.log_artifacts(new, local)
    dst.set_terminated(new, status=run.info.status, end_time=run.info.end_time)
    return new


def copy_tree(copying: Copying, run: Mlflow, parent: str | None, into: str | None) -> str:
    """``run`` and every run nested below it, parents before children."""
    new = copy_run(copying, run, parent, into)
    for child in copying.runs:
        if child.data.tags.get("mlflow.parentRunId") == run.info.run_id:
            copy_tree(copying, child, new, None)
    return new


def copy_whole(copying: Copying, run: Mlflow, parent: str | None = None, into: str | None = None) -> str:
    """:func:`copy_tree`, all or nothing: when a copy fails, the runs it made are deleted again and the error goes
    on (a run left RUNNING without its metrics was counted as imported, and never imported again)."""
    try:
        return copy_tree(copying, run, parent, into)
    except BaseException:
        copying.undo()
        raise


@dataclass
class Imported:
    done: list[tuple[str, str]] = field(default_factory=list)  # (source id, new id) of the top-level runs copied
    left: dict[str, int] = field(default_factory=dict)  # runs left in the fallback store, per store they are for


def import_runs(from_uri: str, to_uri: str, experiment: str = EXPERIMENT, every_store: bool = False) -> Imported:
    """Copy every not-yet-imported fallback run tree recorded for ``to_uri`` (for any store with ``every_store``).

    A fallback store collects runs for whichever store was down; importing another store's runs here would
    mark them imported, and they would never reach the store they were meant for.
    """
    from mlflow.tracking import MlflowClient

    src = MlflowClient(from_uri)
    exp = src.get_experiment_by_name(experiment)
    if exp is None:
        return Imported()
    runs = src.search_runs([exp.experiment_id], max_results=50000, order_by=["attributes.start_time ASC"])
    meant = redact(to_uri)  # fallback runs name their store as the recorder printed it: without credentials
    # made by a Tracker, as every run's experiment is (the artifact root matters only for a new local store)
    exp_id = Tracker(to_uri, experiment, artifact_root=artifact_root(to_uri)).experiment_id
    dst = MlflowClient(to_uri)
    result = Imported()
    for run in runs:
        tags = run.data.tags
        if keys.FALLBACK_FOR not in tags or keys.IMPORTED_TO in tags or "mlflow.parentRunId" in tags:
            continue
        store = tags[keys.FALLBACK_FOR]
        if store != meant and not every_store:
            result.left[store] = result.left.get(store, 0) + 1
            continue
        # a phase of a comparison whose run exists there nests under it; a comparison finished here completes it
        parent = existing(dst, tags.get(keys.COMPARISON_PARENT))
        into = existing(dst, tags.get(keys.COMPLETES))
        new = copy_whole(Copying(src, dst, runs, exp_id), run, parent, into)
        src.set_tag(run.info.run_id, keys.IMPORTED_TO, f"{meant} {new}")
        result.done.append((run.info.run_id, new))
    return result


def import_export(folder: Path, to_uri: str, experiment: str = EXPERIMENT) -> Imported:
    """A run tree exported to files (a study directory brought back from a GPU host) copied into ``to_uri``,
    once: a second import of the same export copies nothing."""
    from mlflow.tracking import MlflowClient

    src = ExportedStore(folder)  # every run and artifact checked before anything is written
    exp_id = Tracker(to_uri, experiment, artifact_root=artifact_root(to_uri)).experiment_id
    dst = MlflowClient(to_uri)
    root = src.root.info.run_id
    earlier = dst.search_runs([exp_id], keys.tag_filter(keys.IMPORTED_FROM, root), max_results=100)
    if any(finished_import(r) for r in earlier):
        return Imported(left={"already imported": 1})
    for half in dst.search_runs([exp_id], f"tags.`{IMPORT_OF}` = '{root}'", max_results=50000):
        dst.delete_run(half.info.run_id)  # an import killed part-way (its undo never ran): it starts again whole
    new = copy_whole(Copying(src, dst, src.runs, exp_id, mark={IMPORT_OF: root}), src.root)
    dst.set_tag(new, IMPORT_DONE, "true")
    return Imported(done=[(root, new)])


IMPORT_OF, IMPORT_DONE = keys.IMPORT_OF, keys.IMPORT_DONE


def finished_import(run: Mlflow) -> bool:
    """A copied export root that is whole: tagged done once its tree was copied (an import from before these tags
    has neither tag and counts as whole)."""
    tags = run.data.tags
    return tags.get(IMPORT_DONE) == "true" or IMPORT_OF not in tags


def artifact_root(to_uri: str) -> Path:
    """Where a new experiment's artifacts go in a local store: beside its database (a server chooses its own)."""
    db = sqlite_path(to_uri)
    return db.parent / "mlartifacts" if db is not None else Path(ARTIFACT_DIR)
