"""Tests of ``suites/config/scenario.py``."""

from __future__ import annotations

from suites.run.plan import peer_timeout_s


def test_nccl_timeout_outlasts_every_wait_a_peer_can_see():
    from suites.config.scenario import ScenarioConfig

    s = ScenarioConfig(name="x")
    assert peer_timeout_s(s.start_timeout_s, s.timeout_s) > s.start_timeout_s + s.timeout_s  # was 300 s flat
    from suites.guest.protocol import GuestSpec

    spec = GuestSpec("g0", "p", "w", {}, {}, [], [], None, 1024)
    assert spec.peer_timeout_s > s.start_timeout_s
