"""Tests of ``suites/workloads/timing.py``: the step meter's timed window, its blank rate and why, its windows."""

from __future__ import annotations

import math

import pytest

from suites.workloads.timing import StepMeter, window_shortfall
from tests.support.meters import metered


def test_each_repeat_reports_its_timed_window_in_epoch_seconds():
    import time

    meter = StepMeter(2, 30)
    before = time.time()
    meter.start()
    for _ in range(30):
        meter.step(64)
    meter.finish()
    assert meter.window is not None and before <= meter.window[0] <= meter.window[1] <= time.time()
    idle = StepMeter(5, 5)
    idle.start()
    for _ in range(5):
        idle.step(64)
    idle.finish()
    assert idle.window is None  # no timed step: no window to take GPU figures from


def test_one_timed_step_gives_no_rate_and_says_why():
    # the README command on cfed7fc: 11 steps, 10 of them warm-up, 1.23 s in all; its cell said 7,707 images/s
    meter, out = metered([0.4] + [0.07] * 9 + [0.0664], warmup=10)
    assert math.isnan(out["images_per_sec"]) and meter.blank_reason == "1 timed step < 20"
    assert out["timed_steps"] == 1 and out["train_time_s"] == pytest.approx(1.0964)
    _, out = metered([0.001] * 40, warmup=5)  # 35 steps, but 35 ms: too short a window for a rate
    assert math.isnan(out["images_per_sec"])


def test_the_typical_step_time_is_the_median_windows_and_one_stall_moves_it_not():
    """A lockstep rank's probe: its first timed step waited 100 ms for peers that started later, the other 165 took
    0.6 ms. The mean says 1.2 ms a step (a run sized on it trains half its window); the median window says 0.6."""
    meter, out = metered([0.001] * 2 + [0.1] + [0.0006] * 165, warmup=2)
    assert out["timed_s"] / out["timed_steps"] == pytest.approx(0.0012, rel=0.01)
    assert meter.typical_step_s() == pytest.approx(0.0006, rel=0.01)
    assert math.isnan(metered([0.001] * 3, warmup=2)[0].typical_step_s())  # one timed step: no window


def test_a_window_too_short_for_a_rate_says_which_floor_it_missed():
    assert window_shortfall(1, 2.0, 20, 0.5) == "1 timed step < 20"
    assert window_shortfall(30, 0.2, 20, 0.5) == "timed window 0.200 s < 0.5 s"
    assert window_shortfall(30, 2.0, 20, 0.5) == ""
