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
