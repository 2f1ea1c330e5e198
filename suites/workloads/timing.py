"""The guest's timing core: :class:`StepMeter` timestamps training steps (warm-up, the timed window, untimed spans
such as an evaluation, the windows behind a rate's jitter, time to accuracy) and says when a window cannot carry a
rate. Workloads call ``step`` and report what they did; the harness (``suites/guest/``) reads the meter: the timing
lives here, as pyperf keeps its in ``_worker``.

A training run sized by time, not by steps (``workload.size_by=time``) is pyperf's calibration, in the guest
(:func:`calibrate`, :func:`hold`): a step count chosen on a 2-core CPU lasts a fraction of a second on a GPU, and a
rate over such a window is blank or noise. So before the start barrier (outside every timed figure) the guest trains
a few real steps after the warm-up, times them, grows the calibration until it lasted :data:`CALIBRATE_FRACTION` of the
window (as pyperf grows its loop count), and then lays the run over as many steps as fill ``workload.min_window_s``
on this device, with ``workload.min_timed_steps`` as the floor. The schedule (learning rate, lookahead) is rebuilt
over that count; the data is cycled as often as it takes. An open-ended run (``workload.until_stopped``) is laid
over ``workload.max_window_s`` instead and ends at the runner's ``stop``. Data-parallel ranks train in lockstep, so
they agree on every figure (the slowest rank's step time): each rank gets the steps its window needs, not a share
of a fixed count."""

from __future__ import annotations

import contextlib
import math
import statistics
import time
from collections.abc import Callable, Iterator
from typing import Protocol

from gpu_probe.shapes import JsonObject
from gpu_probe.stats import summarize

__all__ = ["CALIBRATION_KEYS", "SIZE_BY", "TIME", "WORK", "StepMeter", "calibrate", "hold", "kept_sizing",
           "window_shortfall"]

TIME, WORK = "time", "work"  # what sizes a training run (TrainConfig.size_by)
SIZE_BY = ("auto", TIME, WORK)


class StepMeter:
    """Timestamps training steps; the harness turns them into train time and rate.

    Its clock stops inside :meth:`untimed` (an evaluation during training): every time it reports (train time,
    images/s, the windows, time to accuracy) is training only, and ``untimed_s`` says how much was left out.

    images/s is the steady state: images after the warm-up steps over their time (the timed window). A window of
    fewer than ``min_steps`` steps or ``min_s`` seconds carries no rate: images/s is NaN and :attr:`blank_reason`
    says why (``1 timed step < 20``)."""

    def __init__(self, warmup_steps: int, total_steps: int,
                 on_progress: Callable[[int, int], None] | None = None, min_steps: int = 1,
                 min_s: float = 0.0) -> None:
        self.warmup_steps = warmup_steps
        self.total_steps = total_steps
        self.min_steps, self.min_s = min_steps, min_s
        self.blank_reason = ""
        self.sync: Callable[[], None] = lambda: None  # e.g. torch.cuda.synchronize
        # An open-ended run (workload.until_stopped): the runner's stop, honoured once the window has lasted hold_s
        self.stop_requested: Callable[[], bool] = lambda: False
        self.hold_s = 0.0
        self._on_progress = on_progress or (lambda done, total: None)
        self.steps = 0
        self.images = 0
        self.images_after_warmup = 0
        self.untimed_s = 0.0
        self.t_start = self.t_warm = self.t_last = 0.0
        self.t_target: float | None = None
        self.target: float | None = None  # the accuracy aimed at, and whether the run reached it
        self.target_met: bool | None = None
        self.epochs_checked: float | None = None  # epochs trained when the accuracy was last checked
        self._t_progress = 0.0
        self._paused_at: float | None = None
        self._steady: list[tuple[float, int]] = []  # (time, images) after each post-warm-up step
        self.wall_warm = 0.0  # epoch s where the timed window opened (the sampler's clock)
        self.window: tuple[float, float] | None = None  # the timed window in epoch s, once finished

    def clock(self) -> float:
        """Seconds on the training clock: wall time less the untimed spans (stopped inside one)."""
        return (self._paused_at or time.perf_counter()) - self.untimed_s

    def start(self) -> None:
        self.t_start = self.t_warm = self.t_last = self._t_progress = self.clock()
        self.wall_warm = time.time()

    @contextlib.contextmanager
    def untimed(self) -> Iterator[None]:
        """A span left out of every timed figure: queued device work is finished first (it is training's)."""
        self.sync()
        self._paused_at = t0 = time.perf_counter()
        try:
            yield
        finally:
            self.sync()
            self._paused_at = None
            self.untimed_s += time.perf_counter() - t0

    def step(self, images: int) -> None:
        self.steps += 1
        self.images += images
        if self.steps <= self.warmup_steps:
            if self.steps == self.warmup_steps:
                self.sync()  # queued device work belongs to warm-up
                self.t_warm, self.wall_warm = self.clock(), time.time()
        else:
            self.images_after_warmup += images
        self.t_last = self.clock()
        if self.steps > self.warmup_steps:
            self._steady.append((self.t_last, images))
        if self.t_last - self._t_progress > 0.5 or self.steps == self.total_steps:
            self._t_progress = self.t_last
            self._on_progress(self.steps, self.total_steps)

    def over(self, total: int) -> bool:
        """Whether training should end now: ``total`` steps taken, or (an open-ended run) the runner said stop
        and the timed window has lasted ``hold_s`` and ``min_steps``."""
        if self.steps >= total:
            return True
        timed = len(self._steady)
        return (timed >= self.min_steps and self.t_last - self.t_warm >= self.hold_s
                and self.stop_requested())

    def checked(self, accuracy: float, epochs: float | None = None) -> bool:
        """An accuracy measured (untimed) at this point of training, after ``epochs`` epochs, against the target:
        True once it is met, and the time to accuracy is the training clock now (MLPerf style)."""
        if self.target is None:
            return False
        self.epochs_checked = epochs if epochs is not None else self.epochs_checked
        self.target_met = accuracy >= self.target
        if self.target_met and self.t_target is None:
            self.sync()
            self.t_target = self.clock()
        return self.target_met

    def windows(self, windows: int = 10) -> list[tuple[float, int, int]]:
        """(seconds, steps, images) of consecutive windows of steady-state steps (none under two steps).

        Host timestamps: on a GPU they include queueing, so windows rather than
        single steps; the overall rate is synchronised and exact.
        """
        n = len(self._steady)
        if n < 2:
            return []
        size = max(1, n // windows)
        out, t_prev = [], self.t_warm
        for i in range(0, n - size + 1, size):
            chunk = self._steady[i : i + size]
            t_end = chunk[-1][0]
            if t_end > t_prev:
                out.append((t_end - t_prev, len(chunk), sum(img for _, img in chunk)))
            t_prev = t_end
        return out

    def window_rates(self, windows: int = 10) -> list[float]:
        """images/s over consecutive windows of steady-state steps: the jitter behind the mean."""
        return [images / seconds for seconds, _, images in self.windows(windows)]

    def typical_step_s(self, windows: int = 10) -> float:
        """Seconds per step in the median window: one stall (a lockstep rank waiting at its first step for peers
        that started later) moves it not, where it moves the mean. NaN under two timed steps."""
        per_step = [seconds / steps for seconds, steps, _ in self.windows(windows)]
        return statistics.median(per_step) if per_step else math.nan

    def finish(self) -> dict[str, float]:
        self.sync()
        self.t_last = self.clock()
        train = self.t_last - self.t_start
        timed_steps = len(self._steady)
        timed_s = self.t_last - self.t_warm if timed_steps else 0.0
        self.window = (self.wall_warm, time.time()) if timed_steps else None
        rate = float("nan")  # also for a workload that processes no images (a probe)
        self.blank_reason = window_shortfall(timed_steps, timed_s, self.min_steps, self.min_s) if self.images else ""
        if self.images and not self.blank_reason:
            rate = self.images_after_warmup / timed_s
        out = {"train_time_s": train, "images_per_sec": rate, "images": float(self.images),
               "steps": float(self.steps), "timed_steps": float(timed_steps), "timed_s": timed_s}
        jitter = summarize(self.window_rates())
        if jitter.n >= 3:
            out.update({"images_per_sec.jitter_median": jitter.median, "images_per_sec.jitter_stderr": jitter.stderr,
                        "images_per_sec.jitter_mad": jitter.mad})
        if self.t_target is not None:
            out["time_to_accuracy_s"] = self.t_target - self.t_start
        if self.target is not None and self.target_met is not None:
            out.update({"target_accuracy": self.target, "target_met": float(self.target_met)})
            if self.epochs_checked is not None:  # time to accuracy says after how many epochs it was met (or missed)
                out["epochs_trained"] = float(self.epochs_checked)
        return out


def window_shortfall(steps: int, seconds: float, min_steps: int, min_s: float) -> str:
    """Why a timed window of ``steps`` steps over ``seconds`` cannot carry a rate ('' when it can)."""
    if steps < max(1, min_steps):
        return f"{steps} timed step{'s' if steps != 1 else ''} < {max(1, min_steps)}"
    if not seconds > 0 or seconds < min_s:
        return f"timed window {seconds:.3f} s < {min_s:g} s"
    return ""


# --- a run sized by time ---------------------------------------------------------------------------------------

class Windowed(Protocol):
    """What a training workload's config says of its window (TrainConfig's fields; the plugin base imports this
    module, so it is named by what it holds)."""

    warmup_steps: int
    min_timed_steps: int
    max_steps: int | None
    min_window_s: float
    max_window_s: float


class Trainable(Protocol):
    """What calibrating a workload asks of it (suites.workloads.base.Workload's)."""

    sized_steps: int | None

    def sized_by(self) -> str: ...

    def build(self) -> None: ...

    def train(self, meter: StepMeter) -> None: ...


# What a guest's info keeps of its sizing, handed to the later repeats of its phase (GuestSpec.calibration)
CALIBRATION_KEYS = ("sized_by", "calibrated_step_ms", "window_s", "calibration_steps", "sized_steps", "capped_by",
                    "schedule_steps", "schedule_s", "until_stopped")
SIZED_STEPS = "sized_steps"  # of them, the one a later repeat trains: a kept sizing without it is calibrated anew
CALIBRATE_FRACTION = 0.1  # of the window: how long the last calibration must last for its step time to count
CALIBRATE_MIN_S = 0.05  # ... and at least this (a clock read and a sync are microseconds)
FIRST_CALIBRATION = 4  # steps after the warm-up in the first calibration
MAX_CALIBRATIONS = 4
# The schedule is laid over 1.5 windows of steps, and a single-rank run ends once its window has lasted (hold):
# a run up to a third faster than its calibration (one beside a busy moment) still fills its window, and one
# slower ends at the schedule's last step, its window the longer. Ranks train in lockstep, so they end at the
# schedule's last step together (a clock read on each would part them by a step).
MARGIN = 1.5
# Ranks cannot hold their window (they end together at the schedule's last step), so theirs is laid over 2 windows:
# four ranks on a 2-core CI host calibrated beside other tests' load and then ran 1.7x faster (0.89 s of a 1 s window)
RANKS_MARGIN = 2.0


def calibrate(workload: Trainable, cfg: Windowed, open_ended: bool = False,
              agree: Callable[[float], float] = lambda step_s: step_s,
              earlier: JsonObject | None = None, margin: float = MARGIN) -> JsonObject:
    """Lay ``workload`` (prepared) over its window by its step time where it is sized by time; what was chosen, for
    the guest's info (results.json): ``sized_by``, the calibrated step time, the steps, the window aimed at.
    ``agree``: the step time every rank goes by (:func:`suites.guest.ranks.slowest`); ``margin``: the windows the
    schedule is laid over (:data:`RANKS_MARGIN` for ranks, which cannot hold theirs). ``earlier``: what the first
    repeat of the same phase chose (its guest's info, :data:`CALIBRATION_KEYS`): taken as it is, as pyperf
    calibrates its loop count in the first worker and every later worker runs it, so a repeat pays no calibration
    and every repeat of a phase trains the same steps; the repeat is still a fresh process with its own warm-up."""
    if workload.sized_by() != TIME:
        return {"sized_by": WORK}
    if earlier and earlier.get("sized_by") == TIME and isinstance(earlier.get(SIZED_STEPS), int):
        return kept_sizing(workload, earlier)
    need_s = max(CALIBRATE_MIN_S, CALIBRATE_FRACTION * cfg.min_window_s)
    steps, step_s = FIRST_CALIBRATION, math.nan
    for _ in range(MAX_CALIBRATIONS):
        step_s = agree(calibration_step_s(workload, cfg, steps))
        if not step_s > 0:
            raise RuntimeError(f"sized by time: {steps} calibration steps after the warm-up gave no step time")
        if step_s * steps >= need_s:
            break
        steps = max(steps * 2, min(1_000_000, math.ceil(need_s / max(step_s, 1e-9) * 1.2)))
    window_s = cfg.max_window_s if open_ended else cfg.min_window_s
    timed = max(cfg.min_timed_steps, math.ceil(window_s * margin / max(step_s, 1e-9)))
    total = cfg.warmup_steps + timed
    out: JsonObject = {"sized_by": TIME, "calibrated_step_ms": round(step_s * 1e3, 4), "window_s": cfg.min_window_s,
                   "calibration_steps": steps}
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


def kept_sizing(workload: Trainable, earlier: JsonObject) -> JsonObject:
    """The first repeat's sizing, taken without calibrating (:func:`calibrate`'s ``earlier``)."""
    chosen = {k: earlier[k] for k in CALIBRATION_KEYS if k in earlier}
    chosen["calibrated_in"] = "the phase's first repeat"
    workload.sized_steps = int(earlier[SIZED_STEPS])
    workload.build()
    return chosen


def hold(meter: StepMeter, cfg: Windowed, chosen: JsonObject, world: int,
         stop: Callable[[], bool] | None = None) -> None:
    """The meter's end rule for a run sized by time: it ends once the window has lasted ``workload.min_window_s``
    (one rank: at once then; an open-ended run: once ``stop`` says so too); ranks end at the sized steps."""
    if chosen.get("sized_by") != TIME or world > 1:
        return
    meter.hold_s = cfg.min_window_s
    meter.stop_requested = stop or (lambda: True)


def calibration_step_s(workload: Trainable, cfg: Windowed, steps: int) -> float:
    """Seconds per step over ``steps`` steps after the warm-up, trained from fresh weights: the median window's
    (:meth:`StepMeter.typical_step_s`), not the mean. Data-parallel ranks start their calibrations apart, and each one's
    first lockstep step waits for the last to arrive: in the mean that wait once read a 0.64 ms step as 1.2 ms, and
    four ranks sized to 1 s trained 0.79 s."""
    workload.sized_steps = cfg.warmup_steps + steps
    workload.build()
    meter = StepMeter(cfg.warmup_steps, workload.sized_steps)
    meter.start()
    workload.train(meter)
    meter.finish()
    return meter.typical_step_s()
