"""Tests of ``suites/guest/sizing.py``."""

from __future__ import annotations

import pytest

from suites.guest import sizing
from suites.workloads.fixed_step import FixedStep
from suites.workloads.timing import StepMeter
from tests.support.steps import fixed_step


def timed_run(w: FixedStep, chosen: dict) -> dict[str, float]:
    """What the guest harness does after the barrier: one meter over the sized steps, ending at the window."""
    meter = StepMeter(w.cfg.warmup_steps, w.total_steps(), min_steps=w.cfg.min_timed_steps, min_s=w.cfg.min_timed_s)
    sizing.hold(meter, w.cfg, chosen, world=1)
    meter.start()
    w.train(meter)
    return meter.finish()


@pytest.mark.parametrize("step_ms", [0.5, 50.0], ids=["gpu-like-0.5ms", "cpu-like-50ms"])
def test_a_time_sized_window_lasts_min_window_s_whatever_the_step_time(step_ms: float):
    w = fixed_step(step_ms=step_ms, min_window_s=1.0, warmup_steps=3)
    chosen = sizing.size(w, w.cfg)
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


def test_max_steps_caps_a_time_sized_run_and_says_so():
    w = fixed_step(step_ms=0.5, min_window_s=1.0, max_steps=30)
    chosen = sizing.size(w, w.cfg)
    assert chosen["sized_steps"] == 30 and "workload.max_steps=30" in chosen["capped_by"]


def test_an_open_ended_run_stops_when_told_once_its_window_has_lasted():
    w = fixed_step(step_ms=0.5, min_window_s=0.3, warmup_steps=2)
    chosen = sizing.size(w, w.cfg, open_ended=True)
    # results.json says the window it aims at (0.3 s), not the cap its schedule is laid over (600 s)
    assert chosen["window_s"] == 0.3 and chosen["schedule_s"] == w.cfg.max_window_s
    assert chosen["schedule_steps"] > 100_000 and "sized_steps" not in chosen
    meter = StepMeter(2, w.total_steps(), min_steps=20)
    meter.stop_requested, meter.hold_s = lambda: True, 0.3  # told at once: it still fills its window
    meter.start()
    w.train(meter)
    figures = meter.finish()
    assert 0.3 <= figures["timed_s"] < 0.6 and figures["steps"] < chosen["schedule_steps"]
