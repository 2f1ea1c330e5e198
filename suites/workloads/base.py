"""The workload plugin interface.

A workload is a small class: ``prepare`` loads data and builds the model
(before the start barrier), ``train`` runs the timed part and calls
``meter.step(images)`` after every optimizer step, ``evaluate`` returns
quality metrics. Workloads *report* what they did; the guest harness and the
runner do the timing and sampling. Frameworks are imported inside methods so
configuration errors and ``--help`` never pay for ``import torch``.

Everything about a workload is declared on its class: ``name``, its config
dataclass (``config_cls``), its ``dataset``, its ``category`` (ML training, a
CAD desktop or a device probe) and its ``smoke`` sizes. ``suites.workloads.registry()`` finds the
classes; the config layer registers their schemas with Hydra.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import ClassVar, Optional

from omegaconf import MISSING

from gpu_probe.shapes import JsonObject
from suites.data.dataset import Dataset
from suites.data.options import DataConfig
from suites.errors import BenchError, RenamedSetting, require
from suites.workloads.timing import SIZE_BY, TIME, WORK, StepMeter

ML, CAD, PROBE = "ml", "cad", "probe"  # what a workload stands for in a mixed scenario


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
    # How the run's length is chosen (suites/workloads/timing.py). time: a throughput run, its timed window sized to
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
    category: ClassVar[str] = ML  # ML training, a CAD desktop (CAD) or a device probe (PROBE)
    dataset: ClassVar[Dataset | None] = None  # what resolve_data locates, or None for no data
    process_ranks: ClassVar[bool] = False  # workload.ranks > 1 means rank processes (suites/guest/ranks.py)
    # Values for a seconds-long run: what ``+preset=smoke`` sets on workload.* (command-line values still win).
    smoke: ClassVar[JsonObject] = {}
    # Python modules the guest imports, each with the extra that installs it (optional parts of the suite).
    requires: ClassVar[dict[str, str]] = {}
    gpu_only: ClassVar[bool] = False  # without a GPU it is a recorded failure saying so (a device probe)
    # A comparison's guests of this workload are forked from a preloaded process (suites/guest/zygote.py) that
    # imported these modules once (None: each guest a process of its own, as a library that cannot be forked
    # once imported needs: TensorFlow's runtime, an OpenGL driver's)
    preload: ClassVar[tuple[str, ...] | None] = None

    def __init_subclass__(cls, **kwargs: object) -> None:
        """A plugin written before issue 75 declares ``kind`` (a *kind* is a run's kind now): read for a release."""
        super().__init_subclass__(**kwargs)
        if "kind" in vars(cls):
            warnings.warn(f"workload {getattr(cls, 'name', cls.__name__)}: kind is category now (the old name is "
                          "read until the next release)", RenamedSetting, stacklevel=2)
            cls.category = vars(cls)["kind"]

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

    # Steps of a run sized by time (suites/workloads/timing.py sets it, then rebuilds): total_steps() returns it
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
