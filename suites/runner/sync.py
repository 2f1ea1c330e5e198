"""``python -m suites.runner.sync --from FALLBACK --to SERVER``: import runs recorded while a store was down.

A run recorded in the fallback store carries ``bench.fallback_for``; this
copies each such run with its nested guest runs (tags, params, latest metric
values, artifacts, status) into the target store, then tags the source run
``bench.imported_to`` so a second import copies nothing twice.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path
from typing import Any

SKIP_TAGS = ("mlflow.parentRunId", "mlflow.user", "mlflow.source.name", "mlflow.source.type", "mlflow.runName")


def existing(client: Any, run_id: str | None) -> str | None:
    if not run_id:
        return None
    try:
        return client.get_run(run_id).info.run_id
    except Exception:  # not in this store (imported elsewhere, deleted)
        return None


def _copy(src: Any, dst: Any, run: Any, exp_id: str, parent: str | None, into: str | None = None) -> str:
    """A copy of ``run`` in ``dst`` (or its data written into the existing run ``into``)."""
    from mlflow.entities import Metric, Param, RunTag

    tags = {k: v for k, v in run.data.tags.items() if k not in SKIP_TAGS and k != "bench.imported_to"}
    if parent:
        tags["mlflow.parentRunId"] = parent
    if into:
        new = into
        dst.log_batch(new, tags=[RunTag(k, v) for k, v in tags.items()])
    else:
        new = dst.create_run(exp_id, start_time=run.info.start_time, tags=tags,
                             run_name=run.info.run_name).info.run_id
    have = dst.get_run(new).data.params if into else {}
    params = [Param(k, v) for k, v in run.data.params.items() if k not in have]  # logged before the store died
    metrics = [Metric(k, v, run.info.start_time or 0, 0) for k, v in run.data.metrics.items()]
    for i in range(0, len(params), 100):
        dst.log_batch(new, params=params[i:i + 100])
    for i in range(0, len(metrics), 1000):
        dst.log_batch(new, metrics=metrics[i:i + 1000])
    dst.log_batch(new, tags=[RunTag("bench.imported_from", run.info.run_id)])
    with tempfile.TemporaryDirectory() as tmp:
        if src.list_artifacts(run.info.run_id):
            local = src.download_artifacts(run.info.run_id, "", tmp)
            dst.log_artifacts(new, local)
    dst.set_terminated(new, status=run.info.status, end_time=run.info.end_time)
    return new


def import_runs(from_uri: str, to_uri: str, experiment: str = "gpu-mixed-bench") -> list[tuple[str, str]]:
    """Copy every not-yet-imported fallback run tree; returns (source id, new id) of the top-level runs."""
    from mlflow.tracking import MlflowClient

    from suites.runner.record import Tracker

    src = MlflowClient(from_uri)
    exp = src.get_experiment_by_name(experiment)
    if exp is None:
        return []
    runs = src.search_runs([exp.experiment_id], max_results=50000, order_by=["attributes.start_time ASC"])
    # the artifact root only matters if the target is a local store without the experiment yet
    target = Tracker(to_uri, experiment, artifact_root=Path("outputs/mlartifacts"))
    done = []
    for run in runs:
        tags = run.data.tags
        if "bench.fallback_for" not in tags or "bench.imported_to" in tags:
            continue
        # a phase of a comparison whose run exists there nests under it; a comparison finished here completes it
        parent = existing(target.client, tags.get("bench.comparison_parent"))
        into = existing(target.client, tags.get("bench.completes"))
        new = _copy(src, target.client, run, target.experiment_id, parent, into)
        for child in runs:
            if child.data.tags.get("mlflow.parentRunId") == run.info.run_id:
                _copy(src, target.client, child, target.experiment_id, new)
        src.set_tag(run.info.run_id, "bench.imported_to", f"{to_uri} {new}")
        done.append((run.info.run_id, new))
    return done


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m suites.runner.sync", description=__doc__)
    ap.add_argument("--from", dest="src", default="sqlite:///outputs/mlflow-fallback.db")
    ap.add_argument("--to", dest="dst", required=True, help="the tracking server (or store) to import into")
    ap.add_argument("--experiment", default="gpu-mixed-bench")
    args = ap.parse_args(argv)
    try:
        done = import_runs(args.src, args.dst, args.experiment)
    except Exception as exc:
        print(f"error: import into {args.dst} failed: {str(exc).splitlines()[0] if str(exc) else exc!r}",
              file=sys.stderr)
        return 1
    for old, new in done:
        print(f"imported {old} -> {new}")
    print(f"{len(done)} run(s) imported from {args.src} into {args.dst}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
