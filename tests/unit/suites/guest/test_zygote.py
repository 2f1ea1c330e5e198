"""Tests of ``suites/guest/zygote.py``: a runner killed outright takes its zygote and every guest forked from it
with it (PR_SET_PDEATHSIG, each on its parent), and a forked guest lives in the environment it was asked for, not
the zygote's."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from suites.poll import wait_until
from tests.support.helpers import REPO

pytestmark = pytest.mark.heavy  # a runner, its zygote and a guest are processes

# A runner of its own: a zygote, one fixed-step guest forked from it and left waiting at the barrier; it prints
# their pids and what the guest says of its environment, then waits to be killed.
RUNNER = textwrap.dedent("""
    import json, sys, time
    from pathlib import Path
    from suites.backends.forkserver import ForkServer
    from suites.backends.handle import GuestHandle, GuestPipe
    from suites.guest.protocol import GuestSpec
    from suites.poll import wait_until
    spec = GuestSpec("g0", "cpu", "fixed-step", {"step_ms": 1.0, "min_window_s": 0.25}, {}, [0], [], None, 1024,
                     env={"BENCH_ASKED_FOR": "yes"})
    forks, log = ForkServer(), Path(sys.argv[1])
    g = GuestHandle(spec, log, GuestPipe(log, forks))
    g.start()
    assert wait_until(lambda: (g.pump(), g.state != "starting")[1], 60)
    print(json.dumps({"zygote": forks.proc.pid, "guest": g.pid}), flush=True)
    time.sleep(600)
""")


def environ_of(pid: int) -> dict[str, str]:
    raw = Path(f"/proc/{pid}/environ").read_bytes()  # what execve gave it: the zygote's own, for a forked guest
    return dict(item.split("=", 1) for item in raw.decode().split("\0") if "=" in item)


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return Path(f"/proc/{pid}/stat").read_text().split(") ")[1].startswith("Z")  # a zombie of a dead parent


def test_a_runner_killed_outright_takes_its_zygote_and_its_guests_with_it(tmp_path: Path):
    runner = subprocess.Popen([sys.executable, "-c", RUNNER, str(tmp_path / "g0.log")], cwd=REPO,
                              stdout=subprocess.PIPE, text=True, start_new_session=True)
    try:
        assert runner.stdout is not None
        pids = json.loads(runner.stdout.readline())
        assert Path(f"/proc/{pids['guest']}/stat").read_text().split(") ")[1].split()[1] == str(pids["zygote"])
        assert "BENCH_ASKED_FOR" not in environ_of(pids["guest"])  # what execve gave the zygote (its own: below)
    finally:
        os.killpg(runner.pid, signal.SIGKILL)
        runner.wait()
    assert wait_until(lambda: gone(pids["zygote"]) and gone(pids["guest"]), 10)


def test_a_forked_guest_sees_the_environment_it_was_asked_for(tmp_path: Path):
    from suites.backends.forkserver import ForkServer
    from suites.backends.handle import GuestHandle, GuestPipe
    from suites.guest.protocol import GuestSpec

    assert "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE" not in os.environ  # the zygote's, inherited from this process
    spec = GuestSpec("g0", "cpu", "fixed-step", {"step_ms": 1.0, "min_window_s": 0.25}, {}, [0], [], None, 1024,
                     env={"CUDA_MPS_ACTIVE_THREAD_PERCENTAGE": "25"})
    forks = ForkServer()
    try:
        g = GuestHandle(spec, tmp_path / "g0.log", GuestPipe(tmp_path / "g0.log", forks))
        g.start()
        assert wait_until(lambda: (g.pump(), g.state != "starting")[1], 60)
        g.release()
        assert wait_until(lambda: (g.pump(), g.finished)[1], 60)
    finally:
        forks.close()
    assert forks.proc is not None and g.result is not None and g.result.ok
    assert g.result.info["mps_active_thread_pct"] == "25"  # what the guest saw: its own environment
