"""Tests of ``suites/poll.py``."""

from __future__ import annotations

import time

from suites.poll import wait_until


def test_wait_until_gives_up_at_its_bound_and_returns_as_soon_as_ready():
    t0 = time.monotonic()
    assert wait_until(lambda: False, 0.2, 0.05) is False and time.monotonic() - t0 >= 0.2
    calls = iter([False, False, True])
    t0 = time.monotonic()
    assert wait_until(lambda: next(calls), 30, 0.01) is True and time.monotonic() - t0 < 5
