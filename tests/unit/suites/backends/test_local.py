"""Tests of ``suites/backends/local.py``: guests placed on the cores of this runner that no other benchmark run
holds; a run that fits only without the others waits for their cores (CoresHeld), one too big for this host alone is
refused for that, and one that fits beside another says it has company."""

from __future__ import annotations

import os

import pytest

from gpu_probe.inventory import collect
from suites.backends import corelock, local
from suites.backends.placement import Placement
from suites.errors import PlacementError
from tests.support.helpers import compose_config


def test_a_run_too_big_for_this_host_alone_is_refused_for_that_not_queued(monkeypatch: pytest.MonkeyPatch):
    """Another run holding a core must not turn "too much memory for this host" into "wait for its cores"."""
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

    # fits alone: worth waiting for. The holder named by its pid and run dir; where a process of pid 4242 happens to
    # run on this host (CI #20: one of another test's), its command line is said between them
    with pytest.raises(corelock.CoresHeld, match=r"pid 4242\b.*, run dir other\)"):
        local.on_free_cores(needs_every_core)


def test_a_run_that_fits_beside_another_says_it_shares_the_host(monkeypatch: pytest.MonkeyPatch):
    host = sorted(os.sched_getaffinity(0))
    monkeypatch.setattr(corelock, "held_by_others", lambda cores: {cores[-1]: corelock.Holder("4242", "other")})
    seen: list[list[int]] = []

    def fits(free: list[int]) -> list[Placement]:
        seen.append(free)
        return [Placement("g0", free[:1], [], [])]

    (placed,) = local.on_free_cores(fits)
    assert seen == [host[:-1]] and "another benchmark run holds" in placed.note and "pid 4242" in placed.note


def test_the_local_backend_places_a_profiles_guests_on_disjoint_cores(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(corelock, "held_by_others", lambda cores: {})
    cfg = compose_config("profile.vcpus=1")
    placed = local.LocalBackend().place(cfg.profile, 2, collect())
    cores = [c for p in placed for c in p.vcpus]
    assert len(placed) == 2 and len(cores) == len(set(cores)) == 2
    assert not any("another benchmark run" in p.note for p in placed)  # nobody else holds a core
    with pytest.raises(PlacementError):
        local.LocalBackend().place(cfg.profile, len(os.sched_getaffinity(0)) + 1, collect())
