"""The workload plugin interface.

A workload is a small class: ``prepare`` loads data and builds the model
(before the start barrier), ``train`` runs the timed part and calls
``meter.step(images)`` after every optimizer step, ``evaluate`` returns
quality metrics. Workloads *report* what they did; the guest harness and the
runner do the timing and sampling. Frameworks are imported inside methods so
configuration errors and ``--help`` never pay for ``import torch``.

Everything about a workload is declared on its class: ``name``, its config
dataclass (``config_cls``), its ``dataset``, its ``kind`` (ML training or a
CAD desktop) and its ``smoke`` sizes. ``suites.workloads.registry()`` finds the
classes; the config layer registers their schemas with Hydra.
"""

from __future__ import annotations

import contextlib
import math
import statistics
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import ClassVar, Optional

from omegaconf import MISSING

from gpu_probe.shapes import JsonObject
from gpu_probe.stats import summarize
from suites.data.dataset import Dataset
from suites.data.options import DataConfig
from suites.errors import BenchError, require

ML, CAD, PROBE = "ml", "cad", "probe"  # what a workload stands for in a mixed scenario
TIME, WORK = "time", "work"  # what sizes a training run (TrainConfig.size_by)
SIZE_BY = ("auto", TIME, WORK)


@dataclass
class WorkloadConfig:
    name: str = MISSING
    framework: str = MISSING
    warmup_steps: int = 10  # excluded from images_per_sec
    # The timed window a rate needs (steps after warm-up, and seconds): a shorter one leaves images/s blank with
    # the reason, never a rate from a step or two. 20 steps and 0.25 s: a few ms of scheduling jitter moves such a
    # window's rate by about 1 %, on a 2-core CPU (a step of 0.1-0.5 s) as on a GPU (a step of a few ms).
    min_timed_steps: int = 20
    min_timed_s: float = 0.25

    def check(self) -> None:
        require(self.warmup_steps >= 0, "workload.warmup_steps", f"must be >= 0, got {self.warmup_steps}")
        require(self.min_timed_steps >= 1, "workload.min_timed_steps", f"must be >= 1, got {self.min_timed_steps}")
        require(self.min_timed_s >= 0 and math.isfinite(self.min_timed_s), "workload.min_timed_s",
                f"must be a number of seconds >= 0, got {self.min_timed_s}")


@dataclass
class TrainConfig(WorkloadConfig):
    """Fields every image-classifier training workload shares, whatever the framework."""

    epochs: float = 1  # may be fractional (the CIFAR-10 record trains 9.9): steps = ceil(steps per epoch x epochs)
    batch_size: int = 128
    lr: float = 1e-3
    width: int = 32  # channels of the first layer; the models double it as they go
    train_limit: Optional[int] = None  # use only the first N training images (smoke runs)
    eval_batch_size: int = 1000
    # Time to accuracy: the test accuracy is checked at the end of training (where a fixed-schedule recipe checks
    # it) and, with eval_each_epoch, after every epoch, stopping as soon as it is met (MLPerf style). Evaluations
    # are outside the training clock either way.
    target_accuracy: Optional[float] = None
    eval_each_epoch: bool = True
    ranks: int = 0  # data-parallel workers in the guest; 0 = one per GPU of the profile (what it is given)
    max_steps: Optional[int] = None  # stop after N optimizer steps
    # How the run's length is chosen (suites/guest/sizing.py). time: a throughput run, its timed window sized to
    # last min_window_s on whatever device it runs (the step time calibrated after the warm-up, the data cycled as
    # often as needed; pyperf's calibration); work: the recipe's epochs (an accuracy run: time to its target), and
    # a window too short for a rate is said. auto: work where an accuracy target is set, else time.
    size_by: str = "auto"
    min_window_s: float = 2.0
    # A time-sized run that goes on past min_window_s until the runner says stop (when every guest beside it that
    # is not itself open-ended has finished: an ML guest beside CAD guests trains for their whole replay), at most
    # max_window_s (the schedule is laid over that many seconds of steps).
    until_stopped: bool = False
    max_window_s: float = 600.0
    # A guest given a GPU that trains on the CPU anyway (no CUDA build, a driver mismatch, TensorFlow without its
    # CUDA libraries) fails with that reason; true records it instead, labelled ``not enforced``.
    allow_cpu_fallback: bool = False

    def check(self) -> None:
        super().check()
        require(self.epochs > 0, "workload.epochs", f"must be > 0, got {self.epochs}")
        require(self.batch_size >= 1, "workload.batch_size", f"must be >= 1, got {self.batch_size}")
        require(self.lr > 0, "workload.lr", f"must be > 0, got {self.lr}")
        require(self.width >= 1, "workload.width", f"must be >= 1, got {self.width}")
        require(self.train_limit is None or self.train_limit >= 1, "workload.train_limit", "must be >= 1")
        require(self.target_accuracy is None or 0 < self.target_accuracy <= 1, "workload.target_accuracy",
                "must be in (0, 1]")
        require(0 <= self.ranks <= 64, "workload.ranks", f"must be 0..64, got {self.ranks}")
        require(self.max_steps is None or self.max_steps >= 1, "workload.max_steps", "must be >= 1")
        require(self.size_by in SIZE_BY, "workload.size_by",
                f"must be one of {', '.join(SIZE_BY)}, got {self.size_by!r}")
        require(self.min_timed_s <= self.min_window_s <= 3600 and math.isfinite(self.min_window_s),
                "workload.min_window_s", f"must be seconds from workload.min_timed_s ({self.min_timed_s:g}: the "
                f"window a rate needs) to 3600, got {self.min_window_s}")
        require(self.min_window_s <= self.max_window_s <= 86400, "workload.max_window_s",
                f"must be seconds from workload.min_window_s to 86400, got {self.max_window_s}")
        require(not (self.until_stopped and self.sized_by() == WORK), "workload.until_stopped",
                "needs a run sized by time (workload.size_by=time, or no target_accuracy)")

    def sized_by(self) -> str:
        """'time' or 'work': what ``size_by`` resolves to for this config."""
        if self.size_by != "auto":
            return self.size_by
        return WORK if self.target_accuracy is not None else TIME

    def total_steps(self, images: int, drop_last: bool = False) -> int:
        """Optimizer steps of a run over ``images`` training images: epochs (the last one possibly partial),
        capped by max_steps. ``drop_last``: an epoch is whole batches only (at least one)."""
        per_epoch = max(1, images // self.batch_size) if drop_last else -(-images // self.batch_size)
        steps = max(1, math.ceil(per_epoch * self.epochs - 1e-9))
        return min(steps, self.max_steps) if self.max_steps else steps


@dataclass
class GuestContext:
    """What the guest harness hands a workload: its share of the machine."""

    guest_id: str
    vcpus: list[int]
    gpus: list[str]  # as seen by the guest after CUDA_VISIBLE_DEVICES: empty = CPU
    framebuffer_MiB: int | None
    data: JsonObject
    seed: int
    info: JsonObject = field(default_factory=dict)  # workloads add what they ran on
    rank: int = 0  # data-parallel rank inside the guest (see suites/guest/ranks.py)
    world_size: int = 1


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


# The sizes of a seconds-long run (``+preset=smoke``) shared by the image classifiers.
# A seconds-long run checks that the path works; it trains too little for an accuracy target, so it has none (a
# target it cannot reach would be a 'missed target' on every smoke run) and is sized by time: a 0.5 s window (20
# steps at least), on a CPU as on a GPU. A target given on the command line still applies (then 2.5 epochs).
TRAIN_SMOKE: JsonObject = {"train_limit": 2048, "width": 8, "warmup_steps": 5, "target_accuracy": None,
                       "min_window_s": 0.5}
# airbench94's recipe drops a last partial batch: 2.5 epochs of batches of 128 are 40 steps (its schedule needs
# passes over the data: one epoch of 16 steps leaves synthetic digits at ~19 %, 2.5 epochs reach ~76 %).
RECORD_SMOKE: JsonObject = {**TRAIN_SMOKE, "batch_size": 128, "epochs": 2.5}


class Workload:
    """Base class of plugins: a concrete subclass sets ``name`` and ``config_cls`` and is found by discovery."""

    name: ClassVar[str]
    config_cls: ClassVar[type[WorkloadConfig]]
    kind: ClassVar[str] = ML  # ML training, a CAD desktop (CAD) or a device probe (PROBE)
    dataset: ClassVar[Dataset | None] = None  # what resolve_data locates, or None for no data
    process_ranks: ClassVar[bool] = False  # workload.ranks > 1 means rank processes (suites/guest/ranks.py)
    # Values for a seconds-long run: what ``+preset=smoke`` sets on workload.* (command-line values still win).
    smoke: ClassVar[JsonObject] = {}
    # Python modules the guest imports, each with the extra that installs it (optional parts of the suite).
    requires: ClassVar[dict[str, str]] = {}
    gpu_only: ClassVar[bool] = False  # without a GPU it is a recorded failure saying so (a device probe)

    @classmethod
    def missing(cls) -> list[str]:
        """What ``requires`` names that this Python lacks, as 'module (extra EXTRA)'."""
        import importlib.util

        return [f"{mod} (extra {extra})" for mod, extra in cls.requires.items()
                if importlib.util.find_spec(mod) is None]

    def __init__(self, cfg: WorkloadConfig, ctx: GuestContext) -> None:
        self.cfg = cfg
        self.ctx = ctx

    def require_gpu(self, usable: bool = True) -> None:
        """A ``gpu_only`` workload in a guest without a (``usable``) GPU: one recorded failure saying so."""
        if not self.ctx.gpus or not usable:
            raise BenchError(f"{self.name} needs a GPU and this guest has none (no GPU on the host?)")

    @classmethod
    def resolve_data(cls, cfg: WorkloadConfig, data: DataConfig, seed: int) -> JsonObject:
        """Runner-side, before any guest starts: locate (or synthesise) the data; ``cfg`` is the workload's."""
        return cls.dataset.resolve(data, seed) if cls.dataset else {}

    # Steps of a run sized by time (suites/guest/sizing.py sets it, then rebuilds): total_steps() returns it
    sized_steps: int | None = None

    def sized_by(self) -> str:
        """'time' where the harness sizes this run by its step time, else 'work' (the workload's own count): a
        training config's ``size_by`` says which."""
        return self.cfg.sized_by() if isinstance(self.cfg, TrainConfig) else WORK

    def total_steps(self) -> int:
        raise NotImplementedError

    def prepare(self) -> None:
        raise NotImplementedError

    def build(self) -> None:
        """Fresh state for another repeat (model, optimizer); data stays loaded."""

    def compiled_frames(self) -> int:
        """Graphs compiled so far in this process (a compiling workload says; 0 otherwise)."""
        return 0

    def device_memory(self) -> dict[str, float]:
        """The guest's own count of its GPU memory (:data:`vocab.GUEST_GPU_MEM_SELF`), where it can tell: what
        stands in for NVML's per-process figure where NVML cannot attribute one. {} without a GPU."""
        return {}

    def train(self, meter: StepMeter) -> None:
        raise NotImplementedError

    def evaluate(self) -> dict[str, float]:
        return {}


class Classifier(Workload):
    """Base of the image classifiers (torch, Keras): the test accuracy, measured once per state of the weights (a
    recipe's own check at the end of training and the harness's evaluation after it cost one pass)."""

    _accuracy: float | None = None
    full_precision: ClassVar[str] = "fp32"  # the framework's name for plain fp32 (what a diverged run may fall back to)

    def test_accuracy(self) -> float:
        raise NotImplementedError

    def weights_changed(self) -> None:
        """After a step or a rebuild: the next evaluation measures again."""
        self._accuracy = None

    def evaluate(self) -> dict[str, float]:
        if self._accuracy is None:
            self._accuracy = self.test_accuracy()
        return {"test_accuracy": self._accuracy}

    def check_finite(self, loss: float, steps: int) -> None:
        """A diverged run is a failure with its reason, not a result at chance accuracy reported ``ok`` (checked
        once an epoch: a check per step would cost a device sync each)."""
        if not math.isfinite(loss):
            precision = self.ctx.info.get("precision", "?")
            fallback = f"; workload.precision={self.full_precision} is the fallback" \
                if precision != self.full_precision else ""
            raise RuntimeError(f"training diverged: loss {loss} after {steps} steps (workload.lr={self.cfg.lr:g}, "
                               f"precision {precision}{fallback})")
