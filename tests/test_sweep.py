"""Hydra multirun sweeps: one MLflow experiment, the same short param names on every run."""

from __future__ import annotations

import csv
import subprocess
from pathlib import Path

import pytest

from suites.render.tables import unfold

from .helpers import REPO, SMOKE

pytestmark = [pytest.mark.e2e]


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
    # one table across the jobs at the end, printed, written beside them and recorded as a sweep run
    assert "2 job(s)" in proc.stdout and "sweep summary: " in unfold(proc.stdout), proc.stdout[-3000:]
    summary = list(csv.DictReader((tmp / "sweep" / "sweep_summary.csv").open()))
    assert [(r["job"], r["profile"], r["validity"], r["n"]) for r in summary] == [
        ("0", "m60-1q", "not enforced", "1"), ("1", "m60-8q", "not enforced", "1")]
    assert all(float(r["images_per_sec"]) > 0 for r in summary)
    sweep = df[df["tags.bench.role"] == "sweep"]
    assert len(sweep) == 1
    from mlflow.tracking import MlflowClient

    files = [f.path for f in MlflowClient(uri).list_artifacts(sweep.iloc[0]["run_id"])]
    assert files == ["sweep_summary.csv", "sweep_summary.png"]
