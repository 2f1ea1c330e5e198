"""Tests of ``suites/capacity/curve.py``."""

from __future__ import annotations

import math

from suites.capacity import curve
from suites.capacity.curve import Limit
from tests.support.curves import knee_curve, step

LIMITS = [Limit("cad_slowdown_pct", 5.0), Limit("ml_slowdown_pct", 15.0), Limit("cad_p95_frame_ms", 50.0)]


def test_a_curve_with_a_known_knee_gives_its_knee_and_both_capacities():
    cap = curve.capacity(knee_curve(), LIMITS)
    assert (cap.n_point, cap.n_safe, cap.knee) == (5, 4, 4)
    assert cap.measured == list(range(1, 8))
    assert cap.why_point == "6 guest(s): cad_slowdown_pct 8.0 > 5"
    assert cap.why_safe.startswith("5 guest(s): cad_slowdown_pct upper bound 6.")


def test_capacities_follow_the_limits_exactly_where_the_interval_allows():
    steps = [step(n, [n - 0.1] * 3, [1.0] * 3, [10.0] * 3) for n in range(1, 9)]  # no spread: bounds = medians
    cap = curve.capacity(steps, LIMITS)
    assert (cap.n_point, cap.n_safe) == (5, 5) and cap.why_point == "6 guest(s): cad_slowdown_pct 5.9 > 5"
    wide = [step(n, [n - 2.0, n * 1.0, n + 2.0], [1.0] * 3, [10.0] * 3) for n in range(1, 9)]
    cap = curve.capacity(wide, LIMITS)
    assert cap.n_point == 5 and cap.n_safe < 5 and "upper bound" in cap.why_safe  # the spread costs safe guests


def test_a_step_with_one_repeat_has_no_bound_and_is_not_safe():
    cap = curve.capacity([step(n, [1.0], [1.0], [10.0]) for n in (1, 2, 3)], LIMITS)
    assert (cap.n_point, cap.n_safe) == (3, 0) and "n=1, no interval" in cap.why_safe


def test_a_tile_with_a_failed_guest_fails_its_step_and_names_the_guest():
    steps = knee_curve()
    steps[2] = step(3, [1.6] * 3, [6.0] * 3, [23.0] * 3, failed={1: ("g2",)})
    cap = curve.capacity(steps, LIMITS)
    assert cap.n_point == 2 and cap.n_safe == 2
    assert cap.why_point == "3 guest(s): tile failed: g2 failed"


def test_a_held_out_step_is_predicted_from_its_neighbours_and_labelled_predicted():
    full = curve.capacity(knee_curve(), LIMITS)
    held = curve.capacity([s for s in knee_curve() if s.guests != 3], LIMITS)
    value, label = curve.predict(held.readings, 3, "cad_p95_frame_ms")
    measured, how = curve.predict(full.readings, 3, "cad_p95_frame_ms")
    assert label == curve.PREDICTED and how == curve.MEASURED
    bounds = next(r for r in full.readings if r.guests == 3)
    assert abs(value - measured) <= bounds.upper["cad_p95_frame_ms"] - measured  # within the measured step's CI
    assert math.isnan(curve.predict(held.readings, 9, "cad_p95_frame_ms")[0])  # never extrapolated
    assert curve.predict(held.readings, 9, "cad_p95_frame_ms")[1] == \
        "not measured: 9 is outside the measured counts (1..7)"
