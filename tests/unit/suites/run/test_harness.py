"""Tests of ``suites/run/harness.py``: the measured share and the cost per repeat, from timestamps alone."""

from __future__ import annotations

import math

import pytest

from suites.run import harness
from suites.run.harness import Span


def span(repeat: int, begun: float, window: tuple[float, float] | None, prepare: float = 0.0,
         calibrate: float = 0.0) -> Span:
    """A repeat whose guests start 0.01 s after it begins, are released 0.30 s later, report 0.05 s after their
    window and are shown 0.02 s after that."""
    w0, w1 = window or (begun + 0.32, begun + 1.32)
    return Span("a", repeat, begun, begun + 0.01, w0 - 0.01, w1 + 0.05, w1 + 0.07, window,
                {"prepare_s": prepare, "calibrate_s": calibrate})


def test_the_cost_between_two_windows_is_split_into_parts_that_sum_to_it():
    a = span(1, 0.0, (0.5, 1.5))
    b = span(2, 1.6, (2.0, 3.0), prepare=0.1, calibrate=0.05)
    parts = harness.gap(a, b)
    assert parts is not None
    assert sum(parts.values()) == pytest.approx(2.0 - 1.5)  # the next window's start less this one's end
    assert parts[harness.AFTER] == pytest.approx(0.05) and parts[harness.RECORDING] == pytest.approx(0.02)
    assert parts[harness.PLANNING] == pytest.approx(1.61 - 1.57)
    assert parts[harness.WARM_UP] == pytest.approx(0.01)
    assert parts[harness.SET_UP] == 0.1 and parts[harness.CALIBRATION] == 0.05
    assert parts[harness.START] == pytest.approx((1.99 - 1.61) - 0.15)


def test_the_share_is_the_windows_over_the_wall_and_the_first_repeat_is_said_apart():
    spans = [span(1, 2.0, (3.0, 4.0)), span(2, 4.1, (4.5, 5.5)), span(3, 5.6, (6.0, 7.0))]
    cost = harness.cost_of(spans, t_command=0.0, now=8.0)
    assert cost.repeats == 3 and cost.windows_s == pytest.approx(3.0)
    assert cost.share == pytest.approx(3.0 / 8.0)
    assert cost.first_s == pytest.approx(3.0)  # the command's start to its first window
    assert cost.gaps == pytest.approx([0.5, 0.5])
    head, per_repeat = harness.lines(cost)
    assert "measured share 38% (3.0 s of timed windows over 8.0 s" in head and "3 comparison repeat(s)" in head
    assert "median 0.50 s (min-max 0.50-0.50, n=2)" in per_repeat
    figures = harness.metrics(cost)
    assert figures["harness.measured_share"] == pytest.approx(0.375)
    assert figures["harness.cost_per_repeat_s.median"] == pytest.approx(0.5)
    assert figures["harness.cost_per_repeat_s.n"] == 2.0


def test_a_repeat_without_a_window_breaks_no_figure_and_one_repeat_carries_no_cost():
    spans = [span(1, 0.0, (0.5, 1.5)), Span("a", 2, 1.6, 1.6, 0.0, 0.0, 1.7, None), span(3, 1.8, (2.5, 3.5))]
    cost = harness.cost_of(spans, 0.0, 4.0)
    assert cost.repeats == 2 and cost.gaps == []  # neither gap has both windows: no cost is made up
    assert "cost per repeat: - (fewer than 2 repeats with a window)" in harness.lines(cost)[0]
    assert "harness.cost_per_repeat_s.median" not in harness.metrics(cost)
    nothing = harness.cost_of([], 10.0, 10.0)
    assert math.isnan(nothing.share) and math.isnan(nothing.first_s)


def test_its_json_keeps_each_repeats_timestamps_and_parts():
    spans = [span(1, 0.0, (0.5, 1.5)), span(2, 1.6, (2.0, 3.0))]
    cost = harness.cost_of(spans, 0.0, 3.5)
    doc = harness.as_json(cost, spans)
    assert [s["repeat"] for s in doc["spans"]] == [1, 2] and len(doc["gaps"]) == 1
    assert set(doc["gaps"][0]) == set(harness.PARTS)


def test_a_command_with_no_window_says_so_in_words_never_nan():
    said = harness.lines(harness.cost_of([], 0.0, 12.5))
    assert said == ["harness: measured share - (no timed window in 12.5 s of this command's wall so far: nothing it "
                    "ran was a repeat of a comparison)"]


def test_a_campaigns_figures_sum_its_parts_windows_over_its_own_wall():
    spans = [span(1, 0.0, (0.5, 1.5)), span(2, 1.6, (2.0, 3.0))]
    part = harness.as_json(harness.cost_of(spans, 0.0, 3.5), spans)
    cost = harness.of_parts([part, part, "not a part"], 0.0, 10.0)  # type: ignore[list-item]
    assert cost.windows_s == pytest.approx(4.0) and cost.repeats == 4
    assert cost.share == pytest.approx(0.4) and cost.gaps == pytest.approx([0.5, 0.5])
    assert harness.of_parts([part], -2.0, 10.0).first_s == pytest.approx(2.5)  # from the campaign's own start
