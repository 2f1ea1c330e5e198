"""A StepMeter fed recorded step durations on a clock of its own (no sleeping), for the rate and warm-up tests."""

from __future__ import annotations


# --- every rate from a window that can carry it -----------------------------------------------------------------
def metered(step_s: list[float], warmup: int, images: int = 512, min_steps: int = 20, min_s: float = 0.25):
    """A StepMeter fed recorded step durations on a clock of its own (no sleeping)."""
    from suites.workloads import timing

    clock = [100.0]
    real = timing.time.perf_counter
    timing.time.perf_counter = lambda: clock[0]
    try:
        meter = timing.StepMeter(warmup, len(step_s), min_steps=min_steps, min_s=min_s)
        meter.start()
        for dt in step_s:
            clock[0] += dt
            meter.step(images)
        return meter, meter.finish()
    finally:
        timing.time.perf_counter = real
