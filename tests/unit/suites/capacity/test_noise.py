"""Tests of ``suites/capacity/noise.py``: what puts a consolidation's counts in doubt, each with what to do, and
whether measuring again could clear it."""

from __future__ import annotations

import math

from suites.capacity.noise import doubts, text_of
from tests.support.curves import step

CLEAN = [step(n, [1.0] * 3, [2.0] * 3, [20.0] * 3) for n in (1, 2)]


def test_a_clean_consolidation_has_no_doubt():
    assert doubts([], CLEAN, 99.0, 90.0) == [] and text_of([]) == ""
    assert doubts([("ML guest missed its target in 1 phase(s)", False)], CLEAN, math.nan, 90.0) == []


def test_a_busy_host_is_inconclusive_and_measured_again():
    (d,) = doubts([("host busy in 15 of 15 phase(s) (other processes up to 180 % of a core)", True)], CLEAN, 99.0,
                  90.0)
    assert d.again and d.why.startswith("host busy in 15 of 15")
    assert text_of([d]) == ("inconclusive: host busy in 15 of 15 phase(s) (other processes up to 180 % of a core); "
                            "to size: stop what else runs on this host (or raise host_busy_pct) and size again")


def test_smoke_sizes_and_one_repeat_are_inconclusive_but_not_cleared_by_measuring_again():
    one = [step(n, [1.0], [2.0], [20.0]) for n in (1, 2)]
    found = doubts([("+preset=smoke: a seconds-long check of the machinery, not a measurement", False)], one,
                   99.0, 90.0)
    assert [d.again for d in found] == [False, False]
    assert "smoke sizes" in found[0].why and found[0].remedy == "size at sizing.tier=full"
    assert found[1].why == "1 repeat(s) at 1, 2 CAD guest(s): no interval"
    assert text_of(found).endswith("to size: size at sizing.tier=full; size with sizing.repeats >= 2")


def test_a_short_overlap_and_a_failed_guest_are_inconclusive():
    failed = [step(1, [1.0] * 3, [2.0] * 3, [20.0] * 3, failed={1: ("g2",)})]
    found = doubts([], failed, 62.0, 90.0)
    assert [d.again for d in found] == [True, True]
    assert found[0].why.startswith("guests overlapped 62 % < 90 %")
    assert found[1].why == "a guest failed at 1 CAD guest(s) (g2; 1 failure(s) in all)"
    assert doubts([], [], math.nan, 90.0)[0].why == "no count was measured"
