"""Sweeps through submitit: the local executor for real, the Slurm launcher's composed settings."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.support.helpers import REPO, SMOKE


def test_sweep_through_submitit_local_executor_records_every_job(tmp_path: Path):
    import mlflow

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"  # a fresh store: both jobs create it at once
    args = f"{' '.join(SMOKE)} tracking_uri={uri} artifact_dir={tmp_path / 'art'} hydra.sweep.dir={tmp_path / 'sweep'}"
    proc = subprocess.run(["make", "-s", "bench", "-m", "profile=m60-1q,m60-8q", "launcher=submitit_local",
                           f"ARGS={args} hydra.launcher.timeout_min=10"], cwd=REPO, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "Submitit 'local' sweep output dir" in proc.stdout + proc.stderr
    jobs = sorted((tmp_path / "sweep" / ".submitit").glob("*/*_0_log.out"))
    assert len(jobs) == 2, "one submitit job (own process, own log) per sweep point"
    for log in jobs:
        assert "mlflow: run" in log.read_text() and "Job completed successfully" in log.read_text()
    mlflow.set_tracking_uri(uri)
    df = mlflow.search_runs(experiment_names=["gpu-mixed-bench"])
    scenarios = df[df["tags.bench.role"] == "scenario"]
    # Two jobs creating one sqlite store at once must not lose a job's runs silently (record.store_lock).
    assert sorted(scenarios["params.profile"]) == ["m60-1q", "m60-8q"]
    assert set(scenarios["tags.bench.launcher"]) == {"submitit_local"}
    assert (df["tags.bench.role"] == "guest").sum() == 2
