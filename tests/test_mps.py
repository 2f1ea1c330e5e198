"""sharing=mps: the run's own MPS daemon is started before the guests, each guest runs under its share and memory
limit, and the daemon is told to quit on every path (the end, Ctrl-C, a guest crash). No GPU here: a stand-in
``nvidia-cuda-mps-control`` on PATH records every call (arguments, environment, standard input) and makes or
removes the control pipe the way the real one does; the guests are real processes (tests/mps_run.py)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil
import pytest

from suites.backends.leftovers import Ledger
from suites.backends.mps import MpsDaemon, MpsError, daemon_running
from suites.errors import ConfigError
from suites.poll import wait_until

from .helpers import REPO, training

STANDIN = """#!/usr/bin/env python3
import json, os, pathlib, socket, sys
pipe = pathlib.Path(os.environ["CUDA_MPS_PIPE_DIRECTORY"])
entry = {"argv": sys.argv[1:], "pipe": str(pipe), "log": os.environ.get("CUDA_MPS_LOG_DIRECTORY")}
if "-d" not in sys.argv[1:]:
    entry["stdin"] = sys.stdin.read()
with open(os.environ["MPS_STANDIN_LOG"], "a") as f:
    f.write(json.dumps(entry) + "\\n")
if os.environ.get("MPS_STANDIN_FAIL"):
    print("An instance of this daemon is already running", file=sys.stderr)
    sys.exit(1)
if "-d" in sys.argv[1:]:  # the daemon: listens on pipe/control, apart from its caller, until told quit
    pipe.mkdir(parents=True, exist_ok=True)
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(pipe / "control"))
    server.listen()
    server.settimeout(600)  # a stand-in a failed test never told quit ends by itself
    if os.fork():
        os._exit(0)
    os.setsid()
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)  # the caller's pipes closed: it is not kept waiting
    while True:
        conn = server.accept()[0]
        told = conn.recv(4096)
        conn.close()
        if b"quit" in told:
            os._exit(0)  # the socket file stays behind, as the real daemon's does
else:
    client = socket.socket(socket.AF_UNIX)
    client.connect(str(pipe / "control"))
    client.sendall(entry["stdin"].encode())
    client.close()
"""


@pytest.fixture
def standin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The stand-in control program first on PATH; returns the file its calls are logged to."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    exe = bin_dir / "nvidia-cuda-mps-control"
    exe.write_text(STANDIN)
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    log = tmp_path / "mps-calls.jsonl"
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    monkeypatch.setenv("MPS_STANDIN_LOG", str(log))
    return log


def calls(log: Path) -> list[dict]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def start_run(out: Path, seconds: float) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "tests.mps_run", str(out), str(seconds)], cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


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


@pytest.fixture
def short_dir() -> Path:
    """A run directory short enough for the daemon's sockets to live under it (pytest's own can be too deep, e.g.
    under a test process's popen-gwN folder, and then the daemon's pipes go to a temp folder: right, but not what
    these tests look at)."""
    folder = Path(tempfile.mkdtemp(prefix="mps-", dir="/tmp"))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.e2e
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


@pytest.mark.e2e
def test_ctrl_c_still_quits_the_daemon(short_dir: Path, standin: Path):
    out = short_dir / "run"
    proc = start_run(out, 120)
    wait_training(out, proc)
    assert [c["argv"] for c in calls(standin)] == [["-d"]]  # running, not yet told to quit
    proc.send_signal(signal.SIGINT)
    result = finish(proc, out)
    assert result["status"] == "interrupted"
    assert_started_then_quit(standin, out)


@pytest.mark.e2e
def test_a_guest_crash_still_quits_the_daemon(short_dir: Path, standin: Path):
    out = short_dir / "run"
    proc = start_run(out, 4)
    guests = wait_training(out, proc)
    guests[0].send_signal(signal.SIGKILL)
    result = finish(proc, out)
    assert result["status"] == "partial"
    assert any("SIGKILL" in (g["error"] or "") for g in result["guests"].values())
    assert_started_then_quit(standin, out)


KILLED_RUN = """import os, signal, sys
from pathlib import Path
from suites.backends.leftovers import Ledger
from suites.backends.mps import MpsDaemon
MpsDaemon(Path(sys.argv[1]), Ledger(Path(sys.argv[2]).name, Path(sys.argv[2]).parent)).start()
os.kill(os.getpid(), signal.SIGKILL)  # a runner killed mid-run: no quit
"""


@pytest.mark.e2e
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


@pytest.mark.e2e
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


def test_a_socket_left_by_a_daemon_that_quit_is_not_a_running_daemon(short_dir: Path):
    """The real daemon leaves its control socket behind when it quits (an H200, driver 580): only a socket that
    accepts a connection is a daemon; a file named control is not either."""
    import socket

    pipe = short_dir / "pipe"
    pipe.mkdir()
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(pipe / "control"))
    server.listen()
    assert daemon_running(pipe)
    server.close()
    assert (pipe / "control").exists() and not daemon_running(pipe)
    (pipe / "control").unlink()
    (pipe / "control").touch()
    assert not daemon_running(pipe) and not daemon_running(short_dir / "nothing-here")


@pytest.mark.e2e  # a daemon process started and told to quit
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


def test_a_daemon_that_does_not_start_is_one_line_and_leaves_nothing(tmp_path: Path, standin: Path,
                                                                     monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("MPS_STANDIN_FAIL", "1")
    with pytest.raises(MpsError, match="did not start .*exited 1: An instance of this daemon is already running"):
        MpsDaemon(tmp_path / "run" / "mps").start()
    assert not (tmp_path / "run" / "mps").exists()


def test_no_control_program_is_one_config_error_before_anything(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # nothing on it
    with pytest.raises(ConfigError, match="sharing=mps: nvidia-cuda-mps-control is not on PATH"):
        MpsDaemon(tmp_path / "mps").start()
    assert not (tmp_path / "mps").exists()


@pytest.mark.e2e
def test_sharing_mps_on_a_host_without_gpu_is_one_error_line(tmp_path: Path):
    from .helpers import run_bench

    run = run_bench(tmp_path, "sharing=mps", "+preset=smoke", "progress=quiet")
    assert run.proc.returncode == 2, run.proc.stderr
    lines = run.proc.stderr.strip().splitlines()
    assert lines == [lines[-1]] and lines[-1].startswith("error: sharing=mps needs an NVIDIA GPU; this host has none")
    assert not run.run_dir.exists()
