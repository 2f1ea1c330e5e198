"""A consolidation recorded into an MLflow store by hand, shaped as the runner records one (the comparison run, a run
per phase repeat tagged ``bench.phase``, a run per guest under it): what ``make size`` reads back, at the figures a
test chooses, without measuring anything. A stand-in for a measurement, never for the store."""

from __future__ import annotations

import io
import time
from pathlib import Path
from typing import Any

from rich.console import Console

from gpu_probe import vocab

P95 = vocab.scoped_key("", vocab.FRAME_TIME, "p95")
P50 = vocab.scoped_key("", vocab.FRAME_TIME, "p50")
P99 = vocab.scoped_key("", vocab.FRAME_TIME, "p99")


def guest(client: Any, exp: str, parent: str, gid: str, workload: str, metrics: dict[str, float]) -> None:
    run = client.create_run(exp, tags={"mlflow.parentRunId": parent, "bench.guest_id": gid, "bench.status": "ok"})
    batch(client, run.info.run_id, metrics, {"workload": workload})
    client.set_terminated(run.info.run_id, "FINISHED")


def batch(client: Any, run_id: str, metrics: dict[str, float], params: dict[str, str] | None = None) -> None:
    """A run's figures in one write (log_batch), as a recorder logs them: a test's store made in a tenth of the time
    one call per figure took."""
    from mlflow.entities import Metric, Param

    now = int(time.time() * 1000)
    client.log_batch(run_id, metrics=[Metric(k, float(v), now, 0) for k, v in metrics.items()],
                     params=[Param(k, str(v)) for k, v in (params or {}).items()])


def phase(client: Any, exp: str, parent: str, label: str, cad: int, ml: bool, figures: dict[str, float]) -> None:
    """One phase repeat: ``cad`` CAD guests at ``figures['frame_ms']`` a frame (p95 ``figures['p95']``), an ML guest
    at ``figures['rate']`` images/s, the host's other load ``figures['other']`` % of a core."""
    run = client.create_run(exp, tags={"mlflow.parentRunId": parent, "bench.phase": label})
    rid = run.info.run_id
    batch(client, rid, {vocab.MAKESPAN.key: 10.0, f"{vocab.HOST_CPU.key}.mean": 80.0,
                        f"{vocab.HOST_OTHER_CPU.key}.worst": figures.get("other", 1.0),
                        vocab.OVERLAP.key: figures.get("overlap", 100.0)})
    frame_ms = figures.get("frame_ms", 40.0)
    for i in range(cad):
        guest(client, exp, rid, f"g{i}", "graphics-replay",
              {vocab.RUN_TIME.key: frame_ms * 100 / 1000, vocab.FRAMES.key: 100.0, P50: frame_ms,
               P95: figures.get("p95", frame_ms * 1.5), P99: figures.get("p95", frame_ms * 1.5) * 1.1,
               vocab.STUTTER.key: 0.0})
    if ml:
        guest(client, exp, rid, f"g{cad}", "mnist-torch",
              {vocab.IMAGES_PER_SEC.key: figures.get("rate", 1000.0), vocab.IMAGES.key: 10_000.0})
    client.set_terminated(rid, "FINISHED")


def record(uri: str, experiment: str, profile: str, steps: dict[int, dict[str, float]], repeats: int = 3,
           tags: dict[str, str] | None = None, alone: dict[str, float] | None = None) -> str:
    """A consolidation of ``profile``: ML alone and CAD alone at ``alone``'s figures, then each count (CAD guests ->
    its figures), ``repeats`` times each; its run id."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient(uri)
    exp = client.get_experiment_by_name(experiment)
    exp_id = exp.experiment_id if exp else client.create_experiment(experiment)
    run = client.create_run(exp_id, tags={"bench.kind": "consolidation", **(tags or {})})
    rid = run.info.run_id
    base = alone or {"frame_ms": 40.0, "p95": 60.0, "rate": 1000.0}
    for r in range(repeats):
        phase(client, exp_id, rid, f"{profile}/ml", 0, True, {**base, "other": base.get("other", 1.0)})
        phase(client, exp_id, rid, f"{profile}/cad", 1, False, base)
        for n, figures in steps.items():
            jitter = {k: v * (1 + 0.002 * (r - 1)) if k in ("frame_ms", "p95", "rate") else v
                      for k, v in figures.items()}
            phase(client, exp_id, rid, f"{profile}/n{n}", n, True, jitter)
    client.set_terminated(rid, "FINISHED")
    return rid


def planned_sizing(tmp_path: Path, *args: str) -> tuple[Any, Any, Any, str]:
    """(settings, inventory, plan, store uri) of ``make size`` with ``args`` on this host, into a store under
    ``tmp_path``: nothing measured."""
    from gpu_probe.inventory import collect
    from suites.config.schema import register_configs
    from suites.sizing.campaign import plan_parts
    from suites.sizing.settings import load_settings
    from tests.support.helpers import store_at

    register_configs()
    uri = store_at(tmp_path / "mlflow.db")
    settings = load_settings("default", list(args))
    inv = collect()
    plan = plan_parts(settings, inv, [f"tracking_uri={uri}", f"artifact_dir={tmp_path / 'art'}"],
                      Console(file=io.StringIO()))
    return settings, inv, plan, uri


def recorded(uri: str, part: Any, steps: dict, tags: dict | None = None) -> tuple[tuple[str, str, str], str]:
    """A sizing part's consolidation recorded at ``steps`` with its reuse key: ((profile, policy, type), run id)."""
    rid = record(uri, part.comp.cfg.experiment, part.profile, steps,
                 tags={"bench.sizing_key": part.key, **(tags or {})})
    return (part.profile, part.policy, part.user_type), rid
