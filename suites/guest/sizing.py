"""A training run sized by time, not by steps (``workload.size_by=time``): pyperf's calibration, in the guest.

A step count chosen on a 2-core CPU lasts a fraction of a second on a GPU, and a rate over such a window is blank
or noise. So before the start barrier (outside every timed figure) the guest trains a few real steps after the
warm-up, times them, grows the probe until it lasted :data:`CALIBRATE_FRACTION` of the window (as pyperf grows
its loop count), and then lays the run over as many steps as fill ``workload.min_window_s`` on this device, with
``workload.min_timed_steps`` as the floor. The schedule (learning rate, lookahead) is rebuilt over that count;
the data is cycled as often as it takes. An open-ended run (``workload.until_stopped``) is laid over
``workload.max_window_s`` instead and ends at the runner's ``stop``.

Data-parallel ranks train in lockstep, so they agree on every figure (the slowest rank's step time): each rank
gets the steps its window needs, not a share of a fixed count.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from gpu_probe.shapes import JsonObject
from suites.workloads.base import TIME, WORK, Workload
from suites.workloads.timing import StepMeter

CALIBRATE_FRACTION = 0.1  # of the window: how long the last probe must last for its step time to count
CALIBRATE_MIN_S = 0.05  # ... and at least this (a clock read and a sync are microseconds)
FIRST_PROBE = 4  # steps after the warm-up in the first probe
MAX_PROBES = 4
# The schedule is laid over 1.5 windows of steps, and a single-rank run ends once its window has lasted (hold):
# a run up to a third faster than its probe (a probe beside a busy moment) still fills its window, and one
# slower ends at the schedule's last step, its window the longer. Ranks train in lockstep, so they end at the
# schedule's last step together (a clock read on each would part them by a step).
MARGIN = 1.5


def size(workload: Workload, cfg: Any, open_ended: bool = False,
         agree: Callable[[float], float] = lambda step_s: step_s) -> JsonObject:
    """Size ``workload`` (prepared) by its step time where it is sized by time; what was chosen, for the guest's
    info (results.json): ``sized_by``, the calibrated step time, the steps, the window aimed at. ``agree``: the
    step time every rank goes by (:func:`suites.guest.ranks.slowest`)."""
    if workload.sized_by() != TIME:
        return {"sized_by": WORK}
    need_s = max(CALIBRATE_MIN_S, CALIBRATE_FRACTION * cfg.min_window_s)
    probe, step_s = FIRST_PROBE, math.nan
    for _ in range(MAX_PROBES):
        step_s = agree(probe_step_s(workload, cfg, probe))
        if not step_s > 0:
            raise RuntimeError(f"sizing by time: {probe} probe steps after the warm-up gave no step time")
        if step_s * probe >= need_s:
            break
        probe = max(probe * 2, min(1_000_000, math.ceil(need_s / max(step_s, 1e-9) * 1.2)))
    window_s = cfg.max_window_s if open_ended else cfg.min_window_s
    timed = max(cfg.min_timed_steps, math.ceil(window_s * MARGIN / max(step_s, 1e-9)))
    total = cfg.warmup_steps + timed
    out: JsonObject = {"sized_by": TIME, "calibrated_step_ms": round(step_s * 1e3, 4), "window_s": cfg.min_window_s,
                   "calibration_steps": probe}
    if cfg.max_steps and total > cfg.max_steps:
        out["capped_by"] = f"workload.max_steps={cfg.max_steps} < the {total} steps of a {window_s:g} s window"
        total = cfg.max_steps
    if open_ended:  # what it trains is what the runner's stop leaves: its metrics say (steps, timed_s)
        out["schedule_steps"], out["schedule_s"] = total, window_s
        out["until_stopped"] = (f"trains at least {cfg.min_window_s:g} s, then until the runner stops it (once the "
                                "guests beside it finish; at once where none is beside it); its schedule is laid "
                                f"over {window_s:g} s (workload.max_window_s)")
    else:
        out["sized_steps"] = total
    workload.sized_steps = total
    workload.build()  # fresh weights, the schedule over the sized steps
    return out


def hold(meter: StepMeter, cfg: Any, chosen: JsonObject, world: int, stop: Callable[[], bool] | None = None) -> None:
    """The meter's end rule for a run sized by time: it ends once the window has lasted ``workload.min_window_s``
    (one rank: at once then; an open-ended run: once ``stop`` says so too); ranks end at the sized steps."""
    if chosen.get("sized_by") != TIME or world > 1:
        return
    meter.hold_s = cfg.min_window_s
    meter.stop_requested = stop or (lambda: True)


def probe_step_s(workload: Workload, cfg: Any, probe: int) -> float:
    """Seconds per step over ``probe`` steps after the warm-up, trained from fresh weights: the median window's
    (:meth:`StepMeter.typical_step_s`), not the mean. Data-parallel ranks start their probes apart, and each one's
    first lockstep step waits for the last to arrive: in the mean that wait once read a 0.64 ms step as 1.2 ms, and
    four ranks sized to 1 s trained 0.79 s."""
    workload.sized_steps = cfg.warmup_steps + probe
    workload.build()
    meter = StepMeter(cfg.warmup_steps, workload.sized_steps)
    meter.start()
    workload.train(meter)
    meter.finish()
    return meter.typical_step_s()
