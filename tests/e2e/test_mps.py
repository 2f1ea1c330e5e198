"""sharing=mps: the run's own MPS daemon is started before the guests, each guest runs under its share and memory
limit, and the daemon is told to quit on every path (the end, Ctrl-C, a guest crash). No GPU here: a stand-in
``nvidia-cuda-mps-control`` on PATH records every call (arguments, environment, standard input) and makes or
removes the control pipe the way the real one does; the guests are real processes (tests/mps_run.py)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from suites.backends.leftovers import Ledger
from suites.backends.mps import MpsDaemon, daemon_running
from suites.poll import wait_until
from tests.support.helpers import REPO, training


def calls(log: Path) -> list[dict]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def start_run(out: Path, seconds: float, runs: int = 1) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "tests.support.mps_run", str(out), str(seconds), str(runs)],
                            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def wait_training(out: Path, proc: subprocess.Popen, timeout: float = 120) -> list[psutil.Process]:
    """Both guests past the start barrier; their processes."""
    if not wait_until(lambda: all(training(out, g) for g in ("g0", "g1")) or proc.poll() is not None, timeout, 0.2):
        proc.kill()
        pytest.fail("guests did not start training in time")
    assert proc.poll() is None, proc.communicate()[0]
    return [c for c in psutil.Process(proc.pid).children(recursive=True) if "suites.guest" in " ".join(c.cmdline())]


def finish(proc: subprocess.Popen, out: Path) -> dict:
    text = proc.communicate(timeout=120)[0]
    assert (out / "outcome.json").exists(), text
    return json.loads((out / "outcome.json").read_text())


def assert_started_then_quit(log: Path, out: Path) -> None:
    seen = calls(log)
    assert [c["argv"] for c in seen] == [["-d"], []], seen
    assert seen[1]["stdin"].strip() == "quit"
    # the run's own daemon: pipe and log folders under its run directory, the same for start and stop
    assert seen[0]["pipe"] == seen[1]["pipe"] == str((out / "mps" / "pipe").resolve())
    assert seen[0]["log"] == str((out / "mps" / "log").resolve())


KILLED_RUN = """import os, signal, sys
from pathlib import Path
from suites.backends.leftovers import Ledger
from suites.backends.mps import MpsDaemon
MpsDaemon(Path(sys.argv[1]), Ledger(Path(sys.argv[2]).name, Path(sys.argv[2]).parent)).start()
os.kill(os.getpid(), signal.SIGKILL)  # a runner killed mid-run: no quit
"""


def test_normal_run_starts_the_daemon_gives_each_guest_its_share_and_quits_it(short_dir: Path, standin: Path):
    out = short_dir / "run"
    result = finish(start_run(out, 0.5), out)
    assert result["status"] == "ok", result
    assert_started_then_quit(standin, out)
    for g in result["guests"].values():  # what the guest process itself saw in its environment
        assert g["info"]["mps_active_thread_pct"] == "25"  # m60-2q: 4 per GPU -> 25 % of SMs each
        assert g["info"]["mps_pinned_mem_limit"] == "0=2048M"  # its framebuffer, enforced by the driver
        assert g["validity"] == "emulated (MPS-enforced)"
    assert not (out / "mps" / "pipe" / "control").exists()


def test_a_comparisons_runs_share_one_daemon_started_once_and_quit_after_the_last(short_dir: Path, standin: Path):
    """Issue 73: a consolidation's phases under MPS started a daemon per phase (48 of them in an H200 sizing)."""
    from suites.run.execute import SHARED_NOTE

    out = short_dir / "run"
    proc = start_run(out, 0.3, runs=3)
    text = proc.communicate(timeout=180)[0]
    assert (out / "outcome.json").exists(), text
    runs = json.loads((out / "outcome.json").read_text())
    assert [r["status"] for r in runs] == ["ok"] * 3, runs
    assert_started_then_quit(standin, out)  # one -d before the first run, one quit after the last
    pipes = {g["env"]["CUDA_MPS_PIPE_DIRECTORY"] for r in runs for g in r["guests"].values()}
    assert pipes == {str((out / "mps" / "pipe").resolve())}
    assert all(SHARED_NOTE in g["note"] for r in runs for g in r["guests"].values())
    assert not (out / "mps" / "pipe" / "control").exists()


def test_ctrl_c_still_quits_the_daemon(short_dir: Path, standin: Path):
    out = short_dir / "run"
    proc = start_run(out, 120)
    wait_training(out, proc)
    assert [c["argv"] for c in calls(standin)] == [["-d"]]  # running, not yet told to quit
    proc.send_signal(signal.SIGINT)
    result = finish(proc, out)
    assert result["status"] == "interrupted"
    assert_started_then_quit(standin, out)


def test_a_guest_crash_still_quits_the_daemon(short_dir: Path, standin: Path):
    out = short_dir / "run"
    proc = start_run(out, 4)
    guests = wait_training(out, proc)
    guests[0].send_signal(signal.SIGKILL)
    result = finish(proc, out)
    assert result["status"] == "partial"
    assert any("SIGKILL" in (g["error"] or "") for g in result["guests"].values())
    assert_started_then_quit(standin, out)


def test_a_daemon_left_by_a_killed_run_is_quit_by_the_next(short_dir: Path, standin: Path, tmp_path: Path):
    """The daemon daemonises itself, so it outlives a runner killed with SIGKILL; the next sharing=mps run quits it."""
    ledger = Ledger("ledger", tmp_path)
    killed = subprocess.run([sys.executable, "-c", KILLED_RUN, str(short_dir / "old"), str(ledger.folder)], cwd=REPO)
    assert killed.returncode == -signal.SIGKILL
    old_pipe = (short_dir / "old" / "pipe").resolve()
    assert daemon_running(old_pipe) and len(ledger.orphans()) == 1  # left running, and noted
    fresh = MpsDaemon(short_dir / "new", ledger).start()
    assert fresh.start_note.startswith(f"quit MPS daemon(s) left by a killed run: {old_pipe} (pid ")
    assert not daemon_running(old_pipe)
    assert [(c["argv"], c["pipe"]) for c in calls(standin)] == [
        (["-d"], str(old_pipe)), ([], str(old_pipe)), (["-d"], str((short_dir / "new" / "pipe").resolve()))]
    assert ledger.orphans() == [] and len(list(ledger.folder.iterdir())) == 1  # the live one's own note
    fresh.stop()
    assert list(ledger.folder.iterdir()) == []


def test_a_run_after_a_killed_one_quits_its_daemon_and_says_so(short_dir: Path, standin: Path):
    from suites.backends import mps

    killed = subprocess.run([sys.executable, "-c", KILLED_RUN, str(short_dir / "old"), str(mps.LEDGER.folder)],
                            cwd=REPO)
    assert killed.returncode == -signal.SIGKILL and daemon_running(short_dir / "old" / "pipe")
    out = short_dir / "run"
    result = finish(start_run(out, 0.5), out)
    assert result["status"] == "ok", result
    assert not daemon_running(short_dir / "old" / "pipe")
    for g in result["guests"].values():  # recorded with each guest's placement (results.json, MLflow)
        assert f"quit MPS daemon(s) left by a killed run: {(short_dir / 'old' / 'pipe').resolve()}" in g["note"]


def test_stop_returns_once_the_daemon_quits_though_its_socket_stays(short_dir: Path, standin: Path):
    daemon = MpsDaemon(short_dir / "mps").start()
    assert daemon_running(daemon.pipe_dir)
    pid = daemon.pid()  # out of the runner's tree; the sampler counts its CPU as the run's
    assert pid is not None and pid not in [c.pid for c in psutil.Process().children(recursive=True)]
    t0 = time.monotonic()
    daemon.stop()
    assert time.monotonic() - t0 < 5 and daemon.stop_note == ""  # not STOP_TIMEOUT_S waiting on a stale socket
    assert not (daemon.pipe_dir / "control").exists()  # the stale socket is removed too
    assert wait_until(lambda: not psutil.pid_exists(pid), 5, 0.05) and daemon.pid() is None


def test_sharing_mps_on_a_host_without_gpu_is_one_error_line(tmp_path: Path):
    from tests.support.helpers import run_bench

    run = run_bench(tmp_path, "sharing=mps", "+preset=smoke", "progress=quiet")
    assert run.proc.returncode == 2, run.proc.stderr
    lines = run.proc.stderr.strip().splitlines()
    assert lines == [lines[-1]] and lines[-1].startswith("error: sharing=mps needs an NVIDIA GPU; this host has none")
    assert not run.run_dir.exists()


@pytest.mark.parametrize("runs", [1, 3], ids=["its-own-daemon", "a-comparisons-daemon"])
def test_a_signal_while_the_daemon_is_told_to_quit_is_owed_to_the_command(short_dir: Path, standin: Path, runs: int):
    """Round 7: a SIGTERM that landed while the run's (or its comparison's) MPS daemon was told to quit was noted
    and dropped. Delivered inside MpsDaemon.stop: the daemon still quits, the runs are whole, and the signal is owed
    to the command (which ends its run KILLED and exits 130: tests/e2e/test_interrupt_owed.py)."""
    out = short_dir / "run"
    proc = subprocess.run([sys.executable, "-m", "tests.support.signal_inside", "suites.backends.mps:MpsDaemon.stop",
                           "TERM", "1", "tests.support.mps_run:cli", str(out), "0.3", str(runs)],
                          cwd=REPO, capture_output=True, text=True, timeout=180)
    assert "signal-inside: sent SIGTERM in suites.backends.mps:MpsDaemon.stop" in proc.stderr, proc.stderr[-2000:]
    assert "interrupt noted: stopping the " in proc.stderr and (out / "outcome.json").exists(), proc.stderr[-2000:]
    result = json.loads((out / "outcome.json").read_text())
    results = result if runs > 1 else [result]
    assert [r["status"] for r in results] == ["ok"] * runs and {r["owed"] for r in results} == {"SIGTERM"}
    assert_started_then_quit(standin, out)
