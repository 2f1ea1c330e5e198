"""Tests of ``suites/workloads/timing.py``: the step meter's timed window, its blank rate and why, its windows; a run
sized by time (its calibration, its hold)."""

from __future__ import annotations

import math

import pytest

from suites.workloads import timing
from suites.workloads.fixed_step import FixedStep
from suites.workloads.timing import StepMeter, window_shortfall
from tests.support.meters import metered
from tests.support.steps import fixed_step


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


# --- a run sized by time ---------------------------------------------------------------------------------------
def timed_run(w: FixedStep, chosen: dict) -> dict[str, float]:
    """What the guest harness does after the barrier: one meter over the sized steps, ending at the window."""
    meter = StepMeter(w.cfg.warmup_steps, w.total_steps(), min_steps=w.cfg.min_timed_steps, min_s=w.cfg.min_timed_s)
    timing.hold(meter, w.cfg, chosen, world=1)
    meter.start()
    w.train(meter)
    return meter.finish()


@pytest.mark.heavy
@pytest.mark.parametrize("step_ms", [0.5, 50.0], ids=["gpu-like-0.5ms", "cpu-like-50ms"])
def test_a_time_sized_window_lasts_min_window_s_whatever_the_step_time(step_ms: float):
    w = fixed_step(step_ms=step_ms, min_window_s=1.0, warmup_steps=3)
    chosen = timing.calibrate(w, w.cfg)
    figures = timed_run(w, chosen)
    assert chosen["sized_by"] == "time" and chosen["window_s"] == 1.0
    assert chosen["calibrated_step_ms"] >= step_ms  # a sleep lasts at least its time
    assert figures["timed_s"] >= 1.0 and figures["timed_steps"] >= 20  # the window, and the step floor
    assert figures["images_per_sec"] == pytest.approx(128 / (figures["timed_s"] / figures["timed_steps"]))
    # it ended at its window, inside the schedule's 1.5 windows of steps (or at their end, had it run slower)
    assert figures["steps"] <= chosen["sized_steps"] and (figures["timed_s"] < 1.3 or figures["steps"] ==
                                                          chosen["sized_steps"])
    # the count a fixed 60,000-image epoch of batch 128 would have taken: 469 steps whatever the speed
    assert (figures["steps"] < 469) == (step_ms == 50.0)


def test_ranks_which_cannot_hold_their_window_have_their_schedule_laid_over_two_windows():
    """Four ranks on a 2-core CI host calibrated beside other tests' load, then ran 1.7x faster: 0.89 s of a 1 s
    window (ranks end together at the schedule's last step; a single guest holds its window)."""
    w = fixed_step(step_ms=50.0, min_window_s=1.0, warmup_steps=2)
    one = timing.calibrate(w, w.cfg)
    ranks = timing.calibrate(w, w.cfg, margin=timing.RANKS_MARGIN)
    step_s = ranks["calibrated_step_ms"] / 1e3
    assert ranks["sized_steps"] - 2 == math.ceil(2.0 / step_s) and timing.RANKS_MARGIN == 2.0
    assert one["sized_steps"] - 2 == math.ceil(1.5 / (one["calibrated_step_ms"] / 1e3))


def test_max_steps_caps_a_time_sized_run_and_says_so():
    w = fixed_step(step_ms=0.5, min_window_s=1.0, max_steps=30)
    chosen = timing.calibrate(w, w.cfg)
    assert chosen["sized_steps"] == 30 and "workload.max_steps=30" in chosen["capped_by"]


def test_an_open_ended_run_stops_when_told_once_its_window_has_lasted():
    w = fixed_step(step_ms=0.5, min_window_s=0.3, warmup_steps=2)
    chosen = timing.calibrate(w, w.cfg, open_ended=True)
    # results.json says the window it aims at (0.3 s), not the cap its schedule is laid over (600 s)
    assert chosen["window_s"] == 0.3 and chosen["schedule_s"] == w.cfg.max_window_s
    assert chosen["schedule_steps"] > 100_000 and "sized_steps" not in chosen
    meter = StepMeter(2, w.total_steps(), min_steps=20)
    meter.stop_requested, meter.hold_s = lambda: True, 0.3  # told at once: it still fills its window
    meter.start()
    w.train(meter)
    figures = meter.finish()
    assert 0.3 <= figures["timed_s"] < 0.6 and figures["steps"] < chosen["schedule_steps"]


def test_a_later_repeat_takes_the_first_ones_sizing_without_calibrating():
    first = fixed_step(step_ms=0.5, min_window_s=0.3, warmup_steps=2)
    chosen = timing.calibrate(first, first.cfg)
    kept = {k: chosen[k] for k in timing.CALIBRATION_KEYS if k in chosen}
    later = fixed_step(step_ms=50.0, min_window_s=0.3, warmup_steps=2)  # a calibration at 50 ms would take seconds
    built = []
    later.build = lambda: built.append(later.sized_steps)  # type: ignore[method-assign]
    again = timing.calibrate(later, later.cfg, earlier=kept)
    assert again["calibrated_in"] == "the phase's first repeat"
    assert again["sized_steps"] == chosen["sized_steps"] == later.sized_steps
    assert again["calibrated_step_ms"] == chosen["calibrated_step_ms"]
    assert built == [chosen["sized_steps"]]  # fresh weights over those steps, and no step trained to calibrate
    # a sizing that is not one (a run sized by work, an open-ended schedule): calibrated as ever
    assert "calibrated_in" not in timing.calibrate(first, first.cfg, earlier={"sized_by": "work"})
