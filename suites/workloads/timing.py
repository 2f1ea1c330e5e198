"""The guest's timing core: :class:`StepMeter` timestamps training steps (warm-up, the timed window, untimed spans
such as an evaluation, the windows behind a rate's jitter, time to accuracy) and says when a window cannot carry a
rate. Workloads call ``step`` and report what they did; the harness (``suites/guest/``) reads the meter: the timing
lives here, as pyperf keeps its in ``_worker``. Sizing a run by time (the probe, the hold) is
``suites/guest/sizing.py``'s, over this meter."""

from __future__ import annotations

import contextlib
import math
import statistics
import time
from collections.abc import Callable, Iterator

from gpu_probe.stats import summarize

__all__ = ["StepMeter", "window_shortfall"]


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

    def checked(self, accuracy: float) -> bool:
        """An accuracy measured (untimed) at this point of training against the target: True once it is met, and
        the time to accuracy is the training clock now (MLPerf style)."""
        if self.target is None:
            return False
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
        return out


def window_shortfall(steps: int, seconds: float, min_steps: int, min_s: float) -> str:
    """Why a timed window of ``steps`` steps over ``seconds`` cannot carry a rate ('' when it can)."""
    if steps < max(1, min_steps):
        return f"{steps} timed step{'s' if steps != 1 else ''} < {max(1, min_steps)}"
    if not seconds > 0 or seconds < min_s:
        return f"timed window {seconds:.3f} s < {min_s:g} s"
    return ""
