"""A fault mid-run is a recorded failure (suites/run/execute.py): the runner's own fault stops and records its
guests; a killed runner takes its guests with it."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from tests.support.helpers import REPO, SMOKE, bench_args, runs_of, training, wait_for, with_fault


# --- each mechanism that stops guests, seen on its own ------------------------------------------------------
def test_a_runner_fault_mid_run_is_recorded_and_its_guests_stopped(tmp_path: Path):
    """A guest that cannot start (its log path taken by a folder) while the other already runs: before, a
    traceback and no record; now both guests fail with the runner's reason, the running one is stopped by the
    runner (``finally``; the runner checks none is left), and the run is recorded."""
    import json

    args, run_dir, uri = bench_args(tmp_path, "scenario=concurrent", "workload=idle", *SMOKE, "workload.seconds=600")
    proc = subprocess.run(with_fault(args, dirs=(run_dir / "g1.log",)), cwd=REPO, capture_output=True, text=True,
                          timeout=300,
                          env={**os.environ, "BENCH_DATA_ROOT": str(tmp_path / "none")})
    assert proc.returncode == 1, proc.stderr[-2000:]
    results = json.loads((run_dir / "results.json").read_text())
    assert results["status"] == "failed"
    assert not [r for r in results["reasons"] if "still running" in r], results["reasons"]
    errors = [g["result"]["error"] for g in results["guests"]]
    assert all(e.startswith("stopped: the runner failed mid-run ([Errno 21] Is a directory") for e in errors), errors
    assert "IsADirectoryError" in (run_dir / "runner-fault.log").read_text()
    parents, children = runs_of(uri)
    assert parents.iloc[0]["status"] == "FAILED" and len(children) == 2


def test_a_killed_runner_takes_its_silent_guests_with_it(tmp_path: Path):
    """SIGKILL leaves the runner no say: only PR_SET_PDEATHSIG ends guests that never write to their pipe."""
    import signal

    import psutil

    from tests.support.runs import start_idle_pair

    proc, run_dir, _ = start_idle_pair(tmp_path)
    wait_for(lambda: training(run_dir, "g0") and training(run_dir, "g1"))
    pids = [training(run_dir, "g0"), training(run_dir, "g1")]
    proc.kill()
    proc.communicate(timeout=60)
    try:
        wait_for(lambda: not any(psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE
                                 for p in pids), timeout=15)
    finally:
        for p in pids:  # whatever happens, leave nothing behind
            try:
                os.killpg(p, signal.SIGKILL)
            except ProcessLookupError:
                pass
