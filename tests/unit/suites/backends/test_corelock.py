"""Tests of ``suites/backends/corelock.py``."""

from __future__ import annotations

import os
from pathlib import Path

import pytest


# --- concurrent runs never share pinned cores unseen ------------------------------------------------------------------
def test_core_locks_name_their_holder_and_are_held_by_one_run_at_a_time(tmp_path: Path):
    from suites.backends import corelock
    from suites.errors import PlacementError

    lease = corelock.CoreLease("outputs/runs/first", tmp_path).acquire([0, 1])
    held = corelock.held_by_others([0, 1, 2], tmp_path)  # another descriptor is another holder, even in-process
    assert held == {0: corelock.Holder(str(os.getpid()), "outputs/runs/first"),
                    1: corelock.Holder(str(os.getpid()), "outputs/runs/first")}
    with pytest.raises(PlacementError, match=rf"core 1 \(pid {os.getpid()} `.*`, run dir outputs/runs/first\)"):
        corelock.CoreLease("outputs/runs/second", tmp_path).acquire([1, 2])
    assert corelock.held_by_others([2], tmp_path) == {}  # the refused lease kept nothing
    lease.release()
    assert corelock.held_by_others([0, 1, 2], tmp_path) == {}


def test_a_holder_is_named_by_its_suite_command_pid_and_start_and_the_waiting_line_cuts_whole_words():
    """A waiting line read 'held by phase fast: 1 vCPUs wanted, 0 of 2 cores free: another be…': the waiting
    comparison's own phase, cut mid-word at the terminal's width."""
    import os
    import subprocess
    import sys

    from suites.backends.corelock import Holder, describe, suite_command_of
    from suites.run.plan import waiting_line

    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        assert suite_command_of(str(proc.pid)) == "benchmark"  # no module: said as a benchmark process
    finally:
        proc.kill()
        proc.wait()
    me = Holder(str(os.getpid()), "outputs/runs/size-2026-11-28")
    assert me.short().startswith(f"a {suite_command_of(str(os.getpid()))} run (pid {os.getpid()}, started ")
    held = describe({0: me, 1: me}, short=True)
    assert held.endswith(") on cores 0,1") and held == f"{me.short()} on cores 0,1"
    line = waiting_line(364.4, 500, held + "; " + held)
    assert len(line) <= 120 and line.endswith(" …") and line.startswith("waiting for cores: 364 s of 500 s")
    assert not line[:-2].endswith(("(", ",")) and line.split("held by ")[1].startswith("a ")
