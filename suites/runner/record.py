"""Recording: the run directory first, then MLflow (one parent run, a child per guest).

Only this module talks to MLflow, and only after sampling has ended, so the
sampler never waits on the tracking server.
"""

from __future__ import annotations

import fcntl
import json
import math
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlparse

from suites.runner import report

if TYPE_CHECKING:
    from suites.runner.execute import ScenarioOutcome

MAX_PARAM_LEN = 6000  # MLflow's limit for a param value
RUN_STATUS = {"ok": "FINISHED", "partial": "FAILED", "failed": "FAILED", "interrupted": "KILLED"}


def write_local(outcome: "ScenarioOutcome", run_dir: Path) -> None:
    results = {
        "status": outcome.status,
        "makespan_s": outcome.makespan_s,
        "reasons": outcome.reasons,
        "data": outcome.data,
        "gpu_status": outcome.inventory.gpu_status,
        "sampler": {"requested_hz": outcome.sampler.rate_hz, "achieved_hz": outcome.sampler.achieved_rate_hz,
                    "samples": len(outcome.sampler.rows), "errors": outcome.sampler.errors,
                    "cpu_pct": outcome.sampler.cpu_pct, "clock_events": outcome.sampler.clock_events_seen()},
        "guests": [{"spec": o.spec.__dict__, "placement": o.placement.__dict__, "result": o.result.as_dict(),
                    "sampled": o.sampled} for o in outcome.guests],
    }
    (run_dir / "results.json").write_text(json.dumps(results, indent=2, default=str))
    report.write_samples_csv(outcome.sampler.rows, run_dir / "samples.csv")
    report.plot_utilisation(outcome, run_dir / "utilisation.png")


def resolve_tracking_uri(uri: str, base_dir: Path) -> str:
    """Make sqlite / file paths absolute against the launch directory (Hydra does not chdir)."""
    if uri.startswith("sqlite:///") and not uri.startswith("sqlite:////"):
        path = (base_dir / uri[len("sqlite:///"):]).resolve()
        path.parent.mkdir(parents=True, exist_ok=True)
        return f"sqlite:///{path}"
    parsed = urlparse(uri)
    if parsed.scheme in ("", "file"):
        return (base_dir / (parsed.path if parsed.scheme else uri)).resolve().as_uri()
    return uri


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


def flatten(d: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict):
            out.update(flatten(v, key + "."))
        else:
            out[key] = v
    return out


def finite(metrics: dict[str, Any]) -> dict[str, float]:
    return {k: float(v) for k, v in metrics.items()
            if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)}


class Tracker:
    """A thin layer over MlflowClient (no fluent globals, so tests can use many stores)."""

    def __init__(self, uri: str, experiment: str, artifact_root: Path, fallback_for: str | None = None) -> None:
        from mlflow.tracking import MlflowClient

        if uri.startswith(("http:", "https:")):
            # MLflow retries a dead server with exponential backoff for minutes by default; a benchmark should
            # fall back to its local store within seconds. Explicit user settings win (setdefault).
            os.environ.setdefault("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "1")
            os.environ.setdefault("MLFLOW_HTTP_REQUEST_TIMEOUT", "10")
        self.uri, self.experiment, self.fallback_for = uri, experiment, fallback_for
        with store_lock(uri):  # the first touch creates the store
            self.client = MlflowClient(tracking_uri=uri)
            exp = self.client.get_experiment_by_name(experiment)
            if exp is None:
                local = uri.startswith(("sqlite:", "file:"))
                location = artifact_root.resolve().as_uri() if local else None
                self.experiment_id = self.client.create_experiment(experiment, artifact_location=location)
            else:
                self.experiment_id = exp.experiment_id

    def start(self, name: str, tags: dict[str, str], parent: str | None = None) -> str:
        if parent:
            tags = {**tags, "mlflow.parentRunId": parent}
        return self.client.create_run(self.experiment_id, run_name=name, tags=tags).info.run_id

    def params(self, run_id: str, params: dict[str, Any]) -> None:
        from mlflow.entities import Param

        items = [Param(k, str(v)[:MAX_PARAM_LEN]) for k, v in params.items()]
        for i in range(0, len(items), 100):  # MLflow's per-batch limit
            self.client.log_batch(run_id, params=items[i:i + 100])

    def metrics(self, run_id: str, metrics: dict[str, Any]) -> None:
        import time

        from mlflow.entities import Metric

        now = int(time.time() * 1000)
        items = [Metric(k, v, now, 0) for k, v in finite(metrics).items()]
        for i in range(0, len(items), 1000):
            self.client.log_batch(run_id, metrics=items[i:i + 1000])

    def artifact(self, run_id: str, path: Path) -> None:
        if path.exists():
            self.client.log_artifact(run_id, str(path))

    def end(self, run_id: str, status: str) -> None:
        self.client.set_terminated(run_id, status=status)


def to_mlflow(outcome: "ScenarioOutcome", tracker: Tracker, config_params: dict[str, Any],
              run_dir: Path, run_name: str, under: str | None = None, tags: dict[str, str] | None = None) -> str:
    """Parent run for the scenario (nested ``under`` a comparison run if given), a child per guest."""
    with store_lock(tracker.uri):
        return _to_mlflow(outcome, tracker, config_params, run_dir, run_name, under, tags)


def _to_mlflow(outcome: "ScenarioOutcome", tracker: Tracker, config_params: dict[str, Any],
               run_dir: Path, run_name: str, under: str | None, tags: dict[str, str] | None) -> str:
    from suites.runner.execute import host_summary

    if tracker.fallback_for:  # what `python -m suites.runner.sync` imports into later
        tags = {**(tags or {}), "bench.fallback_for": tracker.fallback_for}
    tags = {"bench.role": "scenario", "bench.status": outcome.status, **(tags or {}),
            "bench.data_source": str(outcome.data.get("source")), "bench.gpu_status": outcome.inventory.gpu_status}
    parent = tracker.start(run_name, tags, parent=under)
    first = outcome.guests[0].spec if outcome.guests else None
    short = {  # the same short names on every run, for MLflow's compare view across sweeps
        "profile": first.profile if first else None, "workload": first.workload if first else None,
        "framework": config_params.get("workload.framework"), "guests": len(outcome.guests),
        "gpus": config_params.get("profile.gpus"), "data.source": outcome.data.get("source")}
    tracker.params(parent, {**config_params, **outcome.inventory.as_params(), **short})
    ok = [o for o in outcome.guests if o.result.ok]
    tracker.metrics(parent, {**host_summary(outcome.sampler), "makespan_s": outcome.makespan_s,
                             "guests_ok": len(ok), "guests_failed": len(outcome.guests) - len(ok),
                             "images_per_sec_total": sum(o.result.metrics.get("images_per_sec", 0) for o in ok)})
    if outcome.reasons:
        tracker.client.set_tag(parent, "bench.failure", "; ".join(outcome.reasons)[:5000])
    events = outcome.sampler.clock_events_seen()
    if events:
        tracker.client.set_tag(parent, "bench.clock_events", json.dumps(events))
    for name in ("config.yaml", "inventory.json", "results.json", "samples.csv", "utilisation.png"):
        tracker.artifact(parent, run_dir / name)
    for o in outcome.guests:
        child = tracker.start(f"{o.spec.guest_id}-{o.spec.workload}",
                              {"bench.role": "guest", "bench.guest_id": o.spec.guest_id,
                               "bench.status": o.result.status}, parent=parent)
        tracker.params(child, {"guest_id": o.spec.guest_id, "profile": o.spec.profile, "workload": o.spec.workload,
                               "vcpus": ",".join(map(str, o.placement.vcpus)), "gpus": o.placement.gpu_label,
                               "framebuffer_MiB": o.spec.framebuffer_MiB, "memory_MiB": o.spec.memory_MiB,
                               **flatten(o.result.info, "info.")})
        tracker.metrics(child, {**o.result.metrics, **o.sampled})
        if o.result.error:
            tracker.client.set_tag(child, "bench.failure", o.result.error[:5000])
        tracker.artifact(child, o.log_path)
        tracker.end(child, "FINISHED" if o.result.ok else "FAILED")
    tracker.end(parent, RUN_STATUS[outcome.status])
    return parent
