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


SLEEPY_SITE = """import time
if b"suites.guest" in open("/proc/self/cmdline", "rb").read():  # the guest process only, never the runner
    time.sleep(3600)
"""


def test_a_guest_that_never_becomes_ready_is_failed_after_its_start_timeout_said_while_it_waits(tmp_path: Path):
    """Hostile round O2: a guest stuck before it says hello (a sitecustomize that sleeps) showed 'progress: g0
    starting 0/?' with no end in sight; now each line says how long of scenario.start_timeout_s it has waited,
    and at the limit the guest is failed with that reason, recorded, and nothing is left running."""
    import json

    import psutil

    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(SLEEPY_SITE)
    args, run_dir, uri = bench_args(tmp_path, "workload=idle", "+preset=smoke", "workload.seconds=1",
                                    "scenario.start_timeout_s=6", "progress=auto")  # not a terminal: log lines
    proc = subprocess.run(args, cwd=REPO, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "BENCH_DATA_ROOT": str(tmp_path / "none"),
                               "PYTHONPATH": f"{site}:{os.environ.get('PYTHONPATH', REPO)}"})
    assert proc.returncode == 1, proc.stderr[-2000:]
    assert "(set-up " in proc.stderr and " of scenario.start_timeout_s=6)" in proc.stderr, proc.stderr[-2000:]
    (guest,) = json.loads((run_dir / "results.json").read_text())["guests"]
    assert "did not reach the start barrier within 6 s" in guest["result"]["error"], guest["result"]
    parents, _ = runs_of(uri)
    assert parents.iloc[0]["status"] == "FAILED"
    assert not [p for p in psutil.process_iter(["cmdline"]) if str(run_dir) in " ".join(p.info["cmdline"] or [])]


FORGING_SITE = """import sys
if b"suites.guest" in open("/proc/self/cmdline", "rb").read():  # the guest process, before its main takes stdout
    print('{"event": "ready", "setup_time_s": 0.0}', flush=True)
    print('{"event": "result", "result": {"guest_id": "g0", "status": "ok", "metrics": {"images_per_sec": 1e9}}}',
          flush=True)
"""


def test_protocol_lines_a_guest_prints_before_it_takes_its_stdout_are_not_its_result(tmp_path: Path):
    """Hostile round: protocol JSON printed by a guest before it redirects stdout (a sitecustomize) was taken as a
    1e9 images/s result. The runner takes only events carrying the guest's nonce (its spec's secret)."""
    import json

    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(FORGING_SITE)
    args, run_dir, _ = bench_args(tmp_path, *SMOKE, "workload=fixed-step")
    proc = subprocess.run(args, cwd=REPO, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "BENCH_DATA_ROOT": str(tmp_path / "none"),
                               "PYTHONPATH": f"{site}:{os.environ.get('PYTHONPATH', REPO)}"})
    assert proc.returncode == 0, proc.stderr[-2000:]
    (guest,) = json.loads((run_dir / "results.json").read_text())["guests"]
    assert guest["result"]["status"] == "ok" and 0 < guest["result"]["metrics"]["images_per_sec"] < 1e9
    assert guest["result"]["metrics"]["steps"] > 0  # the guest's own, measured
