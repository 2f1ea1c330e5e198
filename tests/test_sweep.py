"""Hydra multirun sweeps: one MLflow experiment, the same short param names on every run."""

from __future__ import annotations

import subprocess
from pathlib import Path

from .conftest import REPO, SMOKE


def test_make_bench_sweep_lands_every_run_in_one_experiment(tmp: Path):
    import mlflow

    uri = f"sqlite:///{tmp / 'mlflow.db'}"
    args = f"{' '.join(SMOKE)} tracking_uri={uri} artifact_dir={tmp / 'art'} hydra.sweep.dir={tmp / 'sweep'}"
    proc = subprocess.run(["make", "-s", "bench", "-m", "profile=m60-1q,m60-8q", f"ARGS={args}"], cwd=REPO,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "Launching 2 jobs" in proc.stdout + proc.stderr
    mlflow.set_tracking_uri(uri)
    df = mlflow.search_runs(experiment_names=["gpu-mixed-bench"])
    scenarios = df[df["tags.bench.role"] == "scenario"]
    assert sorted(scenarios["params.profile"]) == ["m60-1q", "m60-8q"]
    for name in ("workload", "framework", "gpus", "guests"):  # what MLflow's compare view plots against
        assert scenarios[f"params.{name}"].notna().all(), name
    assert set(scenarios["params.workload"]) == {"mnist-torch"}
    assert sorted(scenarios["tags.mlflow.runName"]) == ["single-m60-1q-mnist-torch-0", "single-m60-8q-mnist-torch-1"]
