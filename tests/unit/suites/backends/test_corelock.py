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


def test_a_run_too_big_for_this_host_alone_is_refused_for_that_not_queued(monkeypatch: pytest.MonkeyPatch):
    """Another run holding a core must not turn "too much memory for this host" into "wait for its cores"."""
    from suites.backends import corelock, local
    from suites.errors import PlacementError

    monkeypatch.setattr(corelock, "held_by_others", lambda cores: {cores[0]: corelock.Holder("4242", "other")})
    host = sorted(os.sched_getaffinity(0))

    def too_big(free: list[int]) -> list:
        if len(free) < len(host):
            raise PlacementError(f"needs {len(host)} cores")
        raise PlacementError("2 guest(s) x 30000 MiB = 60000 MiB > 24106 MiB host memory")

    with pytest.raises(PlacementError) as exc:
        local.on_free_cores(too_big)
    assert not isinstance(exc.value, corelock.CoresHeld) and "host memory" in str(exc.value)

    def needs_every_core(free: list[int]) -> list:
        if len(free) < len(host):
            raise PlacementError(f"needs {len(host)} cores")
        return []

    with pytest.raises(corelock.CoresHeld, match="pid 4242, run dir other"):  # fits alone: worth waiting for
        local.on_free_cores(needs_every_core)
