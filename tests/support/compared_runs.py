"""Runs recorded into a real MLflow store by hand, shaped as the runner records them (a bench run: a scenario run with
its guests; a comparison: a parent, a scenario run per phase repeat tagged ``bench.phase``, guests under each): what
``make compare`` reads back, at figures a test chooses. A stand-in for a measurement, never for the store."""

from __future__ import annotations

import time
from typing import Any

from gpu_probe import vocab
from tests.support.consolidations import batch

HOST = {"host.hostname": "bench-host", "host.cpu_model": "Test CPU", "host.cpus_usable": "2",
        "host.gpu_names": "no GPU", "host.git_sha": "abc123", "lib.torch": "2.9.0"}


def client_of(uri: str, experiment: str) -> tuple[Any, str]:
    from mlflow.tracking import MlflowClient

    client = MlflowClient(uri)
    exp = client.get_experiment_by_name(experiment)
    return client, exp.experiment_id if exp else client.create_experiment(experiment)


def scenario(client: Any, exp: str, rates: float, params: dict[str, str], tags: dict[str, str]) -> str:
    """One scenario run with one mnist-torch guest at ``rates`` images/s (its train time 1000 / rates x 10 s)."""
    run = client.create_run(exp, tags={"bench.role": "scenario", "bench.status": "ok", "bench.host_busy": "no",
                                       "bench.validity": "not enforced", **tags})
    rid = run.info.run_id
    batch(client, rid, {vocab.MAKESPAN.key: 10.0}, params)
    # named as the recorder names a guest's run: MLflow's random name ('languid-rat-542') once matched a search for
    # the run directory name ending '42'
    guest = client.create_run(exp, run_name="g0-mnist-torch",
                              tags={"mlflow.parentRunId": rid, "bench.role": "guest", "bench.status": "ok"})
    batch(client, guest.info.run_id, {vocab.IMAGES_PER_SEC.key: rates, vocab.TRAIN_TIME.key: 10_000.0 / rates},
          {"workload": "mnist-torch"})
    client.set_terminated(guest.info.run_id, "FINISHED")
    client.set_terminated(rid, "FINISHED")
    return rid


def bench(uri: str, rate: float, params: dict[str, str] | None = None, tags: dict[str, str] | None = None,
          experiment: str = "gpu-mixed-bench", name: str = "") -> str:
    """A bench run (one scenario, one repeat); its run id."""
    client, exp = client_of(uri, experiment)
    rid = scenario(client, exp, rate, {**HOST, "workload": "mnist-torch", **(params or {})},
                   {"mlflow.runName": name or f"run-{time.monotonic_ns()}", **(tags or {})})
    time.sleep(0.002)  # start times in the order made
    return rid


def comparison(uri: str, phases: dict[str, list[float]], params: dict[str, str] | None = None,
               tags: dict[str, str] | None = None, experiment: str = "gpu-mixed-bench", name: str = "") -> str:
    """A comparison whose phase ``label`` ran once per rate in ``phases[label]``; its run id."""
    client, exp = client_of(uri, experiment)
    parent = client.create_run(exp, tags={"bench.role": "comparison", "bench.kind": "plain",
                                          "mlflow.runName": name or f"cmp-{time.monotonic_ns()}", **(tags or {})})
    pid = parent.info.run_id
    for label, rates in phases.items():
        for i, rate in enumerate(rates):
            scenario(client, exp, rate, {**HOST, "workload": "mnist-torch", **(params or {})},
                     {"mlflow.parentRunId": pid, "bench.phase": label, "bench.repeat": str(i + 1)})
    client.set_terminated(pid, "FINISHED")
    time.sleep(0.002)
    return pid


def sizing(uri: str, capacities: dict[str, tuple[float, float]], answer: str,
           experiment: str = "gpu-mixed-bench") -> str:
    """A sizing run as make size records its answer: per profile N safe and N point, the recommendation line."""
    client, exp = client_of(uri, experiment)
    run = client.create_run(exp, tags={"bench.role": "sizing", "bench.kind": "sizing", "bench.answer": answer,
                                       "bench.validity": "emulated"})
    rid = run.info.run_id
    metrics = {f"{profile}.{n}": v for profile, (safe, point) in capacities.items()
               for n, v in (("n_safe", safe), ("n_point", point))}
    batch(client, rid, metrics, {**HOST, "recommended": answer.split(":")[0],
                                 "binds": "GPU time (safe), GPU time (point)"})
    client.set_terminated(rid, "FINISHED")
    time.sleep(0.002)
    return rid


def study(uri: str, parts: dict[str, dict[str, list[float]]], experiment: str = "gpu-mixed-bench") -> str:
    """A study run whose part ``name`` is a comparison of ``parts[name]``'s phases; its run id."""
    client, exp = client_of(uri, experiment)
    run = client.create_run(exp, tags={"bench.role": "study", "bench.kind": "study"})
    rid = run.info.run_id
    for name, phases in parts.items():
        part = comparison(uri, phases, tags={"mlflow.parentRunId": rid, "bench.study_part": name},
                          experiment=experiment)
        client.set_terminated(part, "FINISHED")
    client.set_terminated(rid, "FINISHED")
    time.sleep(0.002)
    return rid
