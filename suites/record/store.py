"""The MLflow store: one thin :class:`Tracker` over ``MlflowClient``, and the sqlite store lock.

Every MLflow write of the suite goes through a Tracker (batched, capped,
with the fallback tag on a fallback store's top-level runs), and only after
sampling has ended, so the sampler never waits on the tracking server.
"""

from __future__ import annotations

import fcntl
import logging
import math
import os
import shlex
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from gpu_probe.shapes import JsonObject
from suites import process_gc
from suites import store_keys as keys
from suites.errors import redact
from suites.record import store_seed

MAX_PARAM_LEN = 6000  # MLflow's limit for a param value
MAX_TAG_LEN = 5000
PARAMS_PER_BATCH, METRICS_PER_BATCH = 100, 1000  # MLflow's per-request limits
# MLflow 3's UI opens an experiment on its GenAI (traces) view unless it is told this is model training.
EXPERIMENT_KIND = ("mlflow.experimentKind", "custom_model_development")


def local_store(uri: str) -> str:
    """``uri`` (absolute: the config made it so), with a sqlite store's folder made, as MLflow does not."""
    path = sqlite_path(uri)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
    return uri


def sqlite_path(uri: str) -> Path | None:
    """The file of a local sqlite store, else None."""
    if not uri.startswith("sqlite:///"):
        return None
    return Path(uri[len("sqlite:///"):])


def missing_store(uri: str) -> str:
    """Why ``uri`` is no store to read ('' where it may be one): a local sqlite file that is not there, or empty
    (MLflow would make its tables there, and a reader would find nothing in them)."""
    db = sqlite_path(uri)
    if db is None or (db.is_file() and db.stat().st_size > 0):
        return ""
    return f"no store at {db}{' (an empty file)' if db.exists() else ''}"


@contextmanager
def store_lock(uri: str) -> Iterator[None]:
    """One process at a time on a sqlite store (parallel sweep jobs share one).

    MLflow creates and migrates a new sqlite store by recreating its tables;
    rows another process writes meanwhile are lost without a trace (seen with
    two submitit jobs recording at once). Server stores serialise themselves.
    """
    if not uri.startswith("sqlite:///"):
        yield
        return
    lock = Path(uri[len("sqlite:///"):] + ".lock")
    with lock.open("a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def flatten(d: JsonObject, prefix: str = "") -> JsonObject:
    out: JsonObject = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict):
            out.update(flatten(v, key + "."))
        else:
            out[key] = v
    return out


def finite(metrics: JsonObject) -> dict[str, float]:
    return {k: float(v) for k, v in metrics.items()
            if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)}


def cap_retries(uri: str) -> None:
    """MLflow retries a dead server with exponential backoff for minutes by default (``report`` against a stopped
    server said nothing for 249 s); every command here gives up within seconds (bench then falls back to its
    local store; report and sync say so in one line). Explicit user settings win (setdefault)."""
    if uri.startswith(("http:", "https:")):
        os.environ.setdefault("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "1")
        os.environ.setdefault("MLFLOW_HTTP_REQUEST_TIMEOUT", "10")


def check_server(uri: str) -> None:
    """A tracking server answers (one request, within :func:`cap_retries`' limits); raises what MLflow raises. A
    local store is not touched: reading it would create it."""
    if uri.startswith(("http:", "https:")):
        from mlflow.tracking import MlflowClient

        cap_retries(uri)
        MlflowClient(uri).search_experiments(max_results=1)


class Tracker:
    """A thin layer over MlflowClient (no fluent globals, so tests can use many stores)."""

    def __init__(self, uri: str, experiment: str, artifact_root: Path, fallback_for: str | None = None) -> None:
        with process_gc.importing():  # MLflow, SQLAlchemy and pandas: ~1 s less with collection paused
            from mlflow.tracking import MlflowClient

        # MLflow logs each SQLAlchemy error with its whole traceback before it raises it (a store whose disk filled
        # printed pages of them); the Recorder says the failure once, in one line, and where the results went.
        logging.getLogger("mlflow.store.db.utils").setLevel(logging.CRITICAL)
        cap_retries(uri)
        self.uri, self.experiment, self.fallback_for = uri, experiment, fallback_for
        with store_lock(uri):  # the first touch creates the store
            db = sqlite_path(uri)
            if db is not None:
                store_seed.seed(db)  # a new store: a copy of MLflow's empty one, not its migrations again
            self.client = MlflowClient(tracking_uri=uri)
            exp = self.client.get_experiment_by_name(experiment)
            if exp is None:
                local = uri.startswith(("sqlite:", "file:"))
                location = artifact_root.resolve().as_uri() if local else None
                self.experiment_id = self.client.create_experiment(experiment, artifact_location=location,
                                                                   tags=dict([EXPERIMENT_KIND]))
            else:
                self.experiment_id = exp.experiment_id
                if EXPERIMENT_KIND[0] not in exp.tags:
                    self.client.set_experiment_tag(self.experiment_id, *EXPERIMENT_KIND)

    def start(self, name: str, tags: dict[str, str], parent: str | None = None,
              start_time: float | None = None) -> str:
        """A new run; ``start_time`` (epoch s) when it is recorded after the fact, so MLflow's Duration is real."""
        if parent:
            tags = {**tags, "mlflow.parentRunId": parent}
        else:  # a run a person launched: what they ran, for make publish's bundle (and a rerun)
            tags = {keys.COMMAND: command_line(), **tags}
        if not parent and self.fallback_for:  # a top-level run here is one `python -m suites sync` imports
            tags = {**tags, keys.FALLBACK_FOR: self.fallback_for}
        start_ms = int(start_time * 1000) if start_time else None
        return self.client.create_run(self.experiment_id, start_time=start_ms, run_name=name, tags=tags).info.run_id

    def params(self, run_id: str, params: JsonObject) -> None:
        log_batch(self.client, run_id, params={k: str(v)[:MAX_PARAM_LEN] for k, v in params.items()})

    def metrics(self, run_id: str, metrics: JsonObject) -> None:
        log_batch(self.client, run_id, metrics=finite(metrics), timestamp_ms=int(time.time() * 1000))

    def series(self, run_id: str, key: str, points: list[tuple[int, float]]) -> None:
        """One metric at several steps (MLflow's chart view draws it as a curve over the step)."""
        from mlflow.entities import Metric

        now = int(time.time() * 1000)
        send_metrics(self.client, run_id, [Metric(key, float(v), now, int(step)) for step, v in points
                                           if math.isfinite(v)])

    def tag(self, run_id: str, key: str, value: str) -> None:
        self.client.set_tag(run_id, key, value[:MAX_TAG_LEN])

    def artifact(self, run_id: str, path: Path, folder: str | None = None) -> None:
        if path.exists():
            self.client.log_artifact(run_id, str(path), folder)

    def end(self, run_id: str, status: str, end_time: float | None = None) -> None:
        self.client.set_terminated(run_id, status=status, end_time=int(end_time * 1000) if end_time else None)

    def end_running_under(self, parent: str, why: str) -> None:
        """Every run nested under ``parent`` still RUNNING (an interrupt left it so), ended KILLED with ``why``
        (``bench.stopped``), its own children first: never FINISHED, so never taken as a whole measurement."""
        exp = self.client.get_run(parent).info.experiment_id
        for run in self.client.search_runs([exp], keys.children_filter(parent), max_results=1000):
            self.end_running_under(run.info.run_id, why)
            if run.info.status == "RUNNING":
                self.tag(run.info.run_id, keys.STOPPED, why)
                self.end(run.info.run_id, "KILLED")

    def delete_tree(self, run_id: str) -> None:
        """``run_id`` and every run nested under it deleted, its children first: MLflow deletes only the run it is
        given, and a child left behind would still be found beside a whole record of the same run."""
        exp = self.client.get_run(run_id).info.experiment_id
        for run in self.client.search_runs([exp], keys.children_filter(run_id), max_results=1000):
            self.delete_tree(run.info.run_id)
        self.client.delete_run(run_id)


def log_batch(client: Any, run_id: str, params: dict[str, str] | None = None,
              metrics: dict[str, float] | None = None, tags: dict[str, str] | None = None,
              timestamp_ms: int = 0) -> None:
    """Params, metrics and tags in as few requests as MLflow's per-request limits allow."""
    from mlflow.entities import Metric, Param, RunTag

    items = [Param(k, v) for k, v in (params or {}).items()]
    for i in range(0, len(items), PARAMS_PER_BATCH):
        client.log_batch(run_id, params=items[i:i + PARAMS_PER_BATCH])
    send_metrics(client, run_id, [Metric(k, v, timestamp_ms, 0) for k, v in (metrics or {}).items()])
    if tags:
        client.log_batch(run_id, tags=[RunTag(k, v) for k, v in tags.items()])


def send_metrics(client: Any, run_id: str, values: list[Any]) -> None:
    """MLflow Metric entities, as many per request as MLflow allows."""
    for i in range(0, len(values), METRICS_PER_BATCH):
        client.log_batch(run_id, metrics=values[i:i + METRICS_PER_BATCH])


def runs_url(uri: str, experiment: str, port: str) -> str:
    """The MLflow UI's page of the suite's runs in ``uri`` (``make ui`` prints it: MLflow opens on its list of
    experiments, or on a GenAI overview, where nothing points to the runs); the UI's root where none is recorded."""
    from mlflow.tracking import MlflowClient

    root = f"http://127.0.0.1:{port}/"
    try:
        exp = MlflowClient(uri).get_experiment_by_name(experiment)
    except Exception as exc:  # a store the UI will say more of: the root still opens
        return f"MLflow UI: {root} ({uri}: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__})"
    if exp is None:
        return f"MLflow UI: {root} (no runs recorded yet in {uri})"
    return f"MLflow UI: {root}#/experiments/{exp.experiment_id}/runs (the suite's runs, experiment {experiment})"


def command_line(argv: list[str] | None = None) -> str:
    """What a person ran, as they would type it again: ``python -m <module> <its arguments>`` (``make`` runs the
    same), credentials redacted; a local path in it stays (make publish leaves those out of a bundle)."""
    args = sys.argv if argv is None else argv
    head = Path(args[0] if args else "?")
    repo = Path(__file__).resolve().parents[2]
    if head.name == "__main__.py":
        module = head.parent.name
    elif head.suffix == ".py" and head.resolve().is_relative_to(repo):
        module = ".".join(head.resolve().relative_to(repo).with_suffix("").parts)
    else:
        module = head.name
    return redact(shlex.join(["python", "-m", module, *args[1:]]))[:MAX_TAG_LEN]
