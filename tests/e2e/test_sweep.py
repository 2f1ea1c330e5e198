"""Hydra multirun sweeps: one MLflow experiment, the same short param names on every run."""

from __future__ import annotations

import csv
import os
import signal
import subprocess
import time
from pathlib import Path

from suites.render.tables import unfold
from tests.support.cifar_files import bench_run
from tests.support.helpers import REPO, SMOKE, bench_args, one_error_line, wait_while_running
from tests.support.runs import bench

IDLE = (*SMOKE, "workload=idle")  # a whole run in seconds: what these cases need is a run, not a measurement


def summary(sweep: Path) -> list[dict[str, str]]:
    return list(csv.DictReader((sweep / "sweep_summary.csv").open()))


def test_a_sweep_runs_every_point_past_a_refused_one_and_says_which(tmp_path: Path):
    """``scenario.guests=1,12,1``: point 1 is refused and named, point 2 runs, the summary is written."""
    sweep = tmp_path / "sweep"
    proc = bench(tmp_path, "-m", *IDLE, "scenario.guests=1,12,1", f"hydra.sweep.dir={sweep}")
    assert proc.returncode == 1, proc.stderr[-3000:]
    assert "error: sweep job 1 (scenario.guests=12): refused: 12 guest(s)" in proc.stderr
    rows = summary(sweep)
    assert [(r["job"], r["point"], r["status"]) for r in rows] == [
        ("0", "scenario.guests=1", "ok"), ("1", "scenario.guests=12", "refused"), ("2", "scenario.guests=1", "ok")]
    assert "12 vCPUs > " in rows[1]["reason"] and (sweep / "sweep_summary.png").is_file()
    assert "note: job 1 (scenario.guests=12): refused: " in proc.stdout
    said = unfold(proc.stdout)  # lines folded at 120 columns, read whole
    assert "sweep summary: " in said and "(MLflow run " in said, proc.stdout[-2000:]


def test_a_sweep_interrupted_during_its_last_point_writes_the_summary_of_the_points_that_finished(tmp_path: Path):
    sweep = tmp_path / "sweep"
    command = bench_args(tmp_path, *SMOKE, "workload=idle", "workload.seconds=1,120",
                         f"hydra.sweep.dir={sweep}")[0]
    args = [*command[:3], "-m", *(a for a in command[3:] if not a.startswith("hydra.run.dir="))]
    proc = subprocess.Popen(args, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "BENCH_DATA_ROOT": str(tmp_path / "none")})
    try:
        wait_while_running(proc, (sweep / "1" / "g0.log").exists, 300, "the last point never started")
        time.sleep(2)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err[-3000:]
    rows = summary(sweep)
    assert [(r["job"], r["point"], r["status"]) for r in rows] == [("0", "workload.seconds=1", "ok"),
                                                                   ("1", "workload.seconds=120", "interrupted")]
    assert "sweep summary: " in unfold(out), out[-2000:]


def test_every_sweep_point_is_prechecked_before_any_job(tmp_path: Path):
    proc = bench_run(tmp_path, "-m", "profile=cpu,nosuch", *SMOKE, f"hydra.sweep.dir={tmp_path / 'sweep'}",
                 fresh_store=True)
    line = one_error_line(proc)
    assert line.startswith("error: sweep point profile=nosuch: In 'config': Could not find 'profile/nosuch'")
    assert not (tmp_path / "sweep").exists() and not (tmp_path / "mlflow.db").exists()  # no job ran
    proc = bench_run(tmp_path, "-m", "profile=cpu,m60-8q", "scenario.repeats=1,0", *SMOKE,
                 f"hydra.sweep.dir={tmp_path / 'sweep'}")
    assert one_error_line(proc).startswith("error: sweep point profile=cpu scenario.repeats=0: scenario.repeats: "
                                           "must be 1..50, got 0")


def test_make_bench_sweep_lands_every_run_in_one_experiment(tmp_path: Path):
    import mlflow

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    args = f"{' '.join(SMOKE)} tracking_uri={uri} artifact_dir={tmp_path / 'art'} hydra.sweep.dir={tmp_path / 'sweep'}"
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
    summary = list(csv.DictReader((tmp_path / "sweep" / "sweep_summary.csv").open()))
    assert [(r["job"], r["profile"], r["validity"], r["n"]) for r in summary] == [
        ("0", "m60-1q", "not enforced", "1"), ("1", "m60-8q", "not enforced", "1")]
    assert all(float(r["images_per_sec"]) > 0 for r in summary)
    sweep = df[df["tags.bench.role"] == "sweep"]
    assert len(sweep) == 1
    from mlflow.tracking import MlflowClient

    files = [f.path for f in MlflowClient(uri).list_artifacts(sweep.iloc[0]["run_id"])]
    assert files == ["sweep_summary.csv", "sweep_summary.png"]
