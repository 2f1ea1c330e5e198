"""A runner killed outright (SIGKILL: Slurm after its KillWait, the OOM killer) writes nothing more; what it owed its
store is recorded by the next command on that store (suites/record/owed.py), KILLED with the reason."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.support.helpers import REPO, SMOKE, all_runs, bench_args, run_bench, store_at, training, wait_for

KILLED = "was ended before it recorded this run"


def sync(uri: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "suites", "sync", "--to", uri], cwd=REPO, capture_output=True,
                          text=True, timeout=300)


def killed(args: list[str], tmp_path: Path, started: Path) -> None:
    """``args`` run in a process group of its own, SIGKILLed (the whole group, as Slurm's cgroup kill) once a
    guest g0 in ``started`` or a folder in it is training."""
    proc = subprocess.Popen(args, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True, env={**os.environ, "BENCH_DATA_ROOT": str(tmp_path / "none")})
    try:
        wait_for(lambda: any(training(d, "g0") for d in [started, *started.glob("*/")]) or proc.poll() is not None,
                 300)
        assert proc.poll() is None, "the run ended before it was killed"
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)


def test_a_runner_killed_outright_is_recorded_killed_by_the_next_sync(tmp_path: Path):
    args, run_dir, uri = bench_args(tmp_path, *SMOKE, "workload=idle", "workload.seconds=600")
    killed(args, tmp_path, run_dir)
    assert all_runs(uri).empty  # the kill allowed no write
    done = sync(uri)
    assert done.returncode == 0, done.stderr[-2000:]
    assert f"recorded: {run_dir}" in done.stdout and "KILLED run" in done.stdout, done.stdout
    runs = all_runs(uri)
    [scenario] = runs[runs["tags.bench.role"] == "scenario"].to_dict("records")
    assert scenario["status"] == "KILLED" and scenario["tags.bench.status"] == "interrupted"
    assert KILLED in scenario["tags.bench.failure"] and "results.json was written" in scenario["tags.bench.failure"]
    assert scenario["tags.bench.run_dir"] == str(run_dir.resolve()) and scenario["params.workload.name"] == "idle"
    again = sync(uri)
    assert "recorded:" not in again.stdout and len(all_runs(uri)) == 1  # paid once


def test_a_killed_runners_run_directory_is_recorded_whole(tmp_path: Path, own_state: Path):
    """Killed after results.json (its store write outran by the kill): the run recorded from its directory holds
    what the runner itself would have recorded, figures and guests, KILLED."""
    run = run_bench(tmp_path / "a", *SMOKE, "workload=fixed-step", "scenario=concurrent")
    assert run.proc.returncode == 0, run.proc.stderr[-2000:]
    dead = subprocess.Popen(["true"])
    dead.wait()  # a pid that no longer runs: the note's maker
    other = store_at(tmp_path / "b" / "mlflow.db")
    where = str(run.run_dir.resolve())
    note = {"pid": dead.pid, "started": time.time() - 60, "what": "scenario", "uri": other,
            "experiment": "gpu-mixed-bench", "run_dir": where, "name": "killed-run", "parent": None,
            "tags": {"bench.run_dir": where, "bench.launcher": "slurm"}}
    from suites.record.owed import LEDGER

    assert LEDGER.folder.parent == own_state and not list(LEDGER.folder.glob("scenario-*"))  # the run paid its own
    (LEDGER.folder / "scenario-1-x").write_text(json.dumps(note))
    half_recorded(other, where, tmp_path / "b" / "artifacts")
    done = sync(other)
    assert done.returncode == 0 and "recorded from its run directory as KILLED run" in done.stdout, done.stdout
    mine, theirs = (all_runs(uri).sort_values(["tags.bench.role", "tags.bench.guest_id"], ascending=[False, True])
                    for uri in (run.tracking_uri, other))
    assert list(theirs["status"]) == ["KILLED", "FINISHED", "FINISHED"]  # the scenario, its two guests as they ended
    assert list(theirs["tags.bench.role"]) == ["scenario", "guest", "guest"]
    for key in ("metrics.images_per_sec", "metrics.images_per_sec_total", "metrics.makespan_s", "params.profile"):
        assert list(theirs[key].fillna(-1)) == list(mine[key].fillna(-1)), key
    assert theirs.iloc[0]["tags.bench.launcher"] == "slurm" and KILLED in theirs.iloc[0]["tags.bench.failure"]
    assert not list(LEDGER.folder.glob("scenario-*"))


def half_recorded(uri: str, run_dir: str, artifacts: Path) -> None:
    """What a kill in the middle of the runner's store write leaves: its scenario run RUNNING, one guest begun."""
    from suites.record.store import Tracker

    t = Tracker(uri, "gpu-mixed-bench", artifacts)
    half = t.start("killed-run", {"bench.role": "scenario", "bench.run_dir": run_dir})
    t.start("g0-fixed-step", {"bench.role": "guest", "bench.guest_id": "g0"}, parent=half)


def test_a_killed_comparison_is_ended_killed_by_the_next_run(tmp_path: Path):
    """A comparison's run (RUNNING from its first phase) and its phase: the next bench run on the store ends the
    one and records the other, each said; no run is left RUNNING."""
    args, run_dir, uri = bench_args(tmp_path, *SMOKE, "scenario=gpu-vs-cpu", "workload=idle", "workload.seconds=600")
    killed(args, tmp_path, run_dir)
    assert set(all_runs(uri)["status"]) == {"RUNNING"}
    nxt = run_bench(tmp_path / "next", *SMOKE, "workload=idle", "workload.seconds=1", f"tracking_uri={uri}")
    assert nxt.proc.returncode == 0, nxt.proc.stderr[-2000:]
    assert "was left RUNNING" in nxt.proc.stdout and "recorded from its run directory" in nxt.proc.stdout
    runs = all_runs(uri)
    assert "RUNNING" not in set(runs["status"])
    [comparison] = runs[runs["tags.bench.role"] == "comparison"].to_dict("records")
    assert comparison["status"] == "KILLED" and KILLED in comparison["tags.bench.stopped"]
    phase = runs[runs["tags.mlflow.parentRunId"] == comparison["run_id"]]
    assert list(phase["status"]) == ["KILLED"]
