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

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar, Optional

from omegaconf import MISSING

from gpu_probe.stats import summarize
from suites.data.dataset import Dataset
from suites.errors import BenchError, require

ML, CAD, PROBE = "ml", "cad", "probe"  # what a workload stands for in a mixed study


@dataclass
class WorkloadConfig:
    name: str = MISSING
    framework: str = MISSING
    warmup_steps: int = 10  # excluded from images_per_sec

    def check(self) -> None:
        require(self.warmup_steps >= 0, "workload.warmup_steps", f"must be >= 0, got {self.warmup_steps}")


@dataclass
class TrainConfig(WorkloadConfig):
    """Fields every image-classifier training workload shares, whatever the framework."""

    epochs: int = 1
    batch_size: int = 128
    lr: float = 1e-3
    width: int = 32  # channels of the first layer; the models double it as they go
    train_limit: Optional[int] = None  # use only the first N training images (smoke runs)
    eval_batch_size: int = 1000
    target_accuracy: Optional[float] = None  # evaluate each epoch; stop when reached
    ranks: int = 0  # data-parallel workers in the guest; 0 = one per GPU of the profile (what it is given)
    max_steps: Optional[int] = None  # stop after N optimizer steps
    # A guest given a GPU that trains on the CPU anyway (no CUDA build, a driver mismatch, TensorFlow without its
    # CUDA libraries) fails with that reason; true records it instead, labelled ``not enforced``.
    allow_cpu_fallback: bool = False

    def check(self) -> None:
        super().check()
        require(self.epochs >= 1, "workload.epochs", f"must be >= 1, got {self.epochs}")
        require(self.batch_size >= 1, "workload.batch_size", f"must be >= 1, got {self.batch_size}")
        require(self.lr > 0, "workload.lr", f"must be > 0, got {self.lr}")
        require(self.width >= 1, "workload.width", f"must be >= 1, got {self.width}")
        require(self.train_limit is None or self.train_limit >= 1, "workload.train_limit", "must be >= 1")
        require(self.target_accuracy is None or 0 < self.target_accuracy <= 1, "workload.target_accuracy",
                "must be in (0, 1]")
        require(0 <= self.ranks <= 64, "workload.ranks", f"must be 0..64, got {self.ranks}")
        require(self.max_steps is None or self.max_steps >= 1, "workload.max_steps", "must be >= 1")

    def total_steps(self, images: int) -> int:
        """Optimizer steps of a run over ``images`` training images: epochs, capped by max_steps."""
        steps = -(-images // self.batch_size) * self.epochs
        return min(steps, self.max_steps) if self.max_steps else steps


@dataclass
class GuestContext:
    """What the guest harness hands a workload: its share of the machine."""

    guest_id: str
    vcpus: list[int]
    gpus: list[str]  # as seen by the guest after CUDA_VISIBLE_DEVICES: empty = CPU
    framebuffer_MiB: int | None
    data: dict[str, Any]
    seed: int
    info: dict[str, Any] = field(default_factory=dict)  # workloads add what they ran on
    rank: int = 0  # data-parallel rank inside the guest (see suites/guest/ranks.py)
    world_size: int = 1


class StepMeter:
    """Timestamps training steps; the harness turns them into train time and rate."""

    def __init__(self, warmup_steps: int, total_steps: int,
                 on_progress: Callable[[int, int], None] | None = None) -> None:
        self.warmup_steps = warmup_steps
        self.total_steps = total_steps
        self.sync: Callable[[], None] = lambda: None  # e.g. torch.cuda.synchronize
        self._on_progress = on_progress or (lambda done, total: None)
        self.steps = 0
        self.images = 0
        self.images_after_warmup = 0
        self.t_start = self.t_warm = self.t_last = 0.0
        self.t_target: float | None = None
        self._t_progress = 0.0
        self._steady: list[tuple[float, int]] = []  # (time, images) after each post-warm-up step

    def start(self) -> None:
        import time

        self.t_start = self.t_warm = self.t_last = self._t_progress = time.perf_counter()

    def step(self, images: int) -> None:
        import time

        self.steps += 1
        self.images += images
        if self.steps <= self.warmup_steps:
            if self.steps == self.warmup_steps:
                self.sync()  # queued device work belongs to warm-up
                self.t_warm = time.perf_counter()
        else:
            self.images_after_warmup += images
        self.t_last = time.perf_counter()
        if self.steps > self.warmup_steps:
            self._steady.append((self.t_last, images))
        if self.t_last - self._t_progress > 0.5 or self.steps == self.total_steps:
            self._t_progress = self.t_last
            self._on_progress(self.steps, self.total_steps)

    def target_reached(self) -> None:
        """The workload hit its target accuracy now (MLPerf-style time to accuracy)."""
        import time

        self.sync()
        self.t_target = time.perf_counter()

    def window_rates(self, windows: int = 10) -> list[float]:
        """images/s over consecutive windows of steady-state steps: the jitter behind the mean.

        Host timestamps: on a GPU they include queueing, so windows rather than
        single steps; the overall rate is synchronised and exact.
        """
        n = len(self._steady)
        if n < 2:
            return []
        size = max(1, n // windows)
        rates, t_prev = [], self.t_warm
        for i in range(0, n - size + 1, size):
            chunk = self._steady[i : i + size]
            t_end = chunk[-1][0]
            if t_end > t_prev:
                rates.append(sum(img for _, img in chunk) / (t_end - t_prev))
            t_prev = t_end
        return rates

    def finish(self) -> dict[str, float]:
        import time

        self.sync()
        self.t_last = time.perf_counter()
        train = self.t_last - self.t_start
        if self.images_after_warmup and self.t_last > self.t_warm:
            rate = self.images_after_warmup / (self.t_last - self.t_warm)
        elif self.images and train > 0:  # too few steps to leave warm-up: report the whole run
            rate = self.images / train
        else:  # a workload that processes no images (a probe) has no image rate
            rate = float("nan")
        out = {"train_time_s": train, "images_per_sec": rate, "images": float(self.images),
               "steps": float(self.steps)}
        jitter = summarize(self.window_rates())
        if jitter.n >= 3:
            out.update({"images_per_sec.jitter_median": jitter.median, "images_per_sec.jitter_stderr": jitter.stderr,
                        "images_per_sec.jitter_mad": jitter.mad})
        if self.t_target is not None:
            out["time_to_accuracy_s"] = self.t_target - self.t_start
        return out


# The sizes of a seconds-long run (``+preset=smoke``) shared by the image classifiers.
TRAIN_SMOKE: dict[str, Any] = {"train_limit": 2048, "max_steps": 40, "width": 8, "warmup_steps": 5}
# CIFAR-10's ResNet-9 at its batch of 512 made a smoke run 20,000 images (25 s on 2 cores): the same steps on
# batches of 128.
CIFAR_SMOKE: dict[str, Any] = {**TRAIN_SMOKE, "batch_size": 128}


class Workload:
    """Base class of plugins: a concrete subclass sets ``name`` and ``config_cls`` and is found by discovery."""

    name: ClassVar[str]
    config_cls: ClassVar[type[WorkloadConfig]]
    kind: ClassVar[str] = ML  # ML training, a CAD desktop (CAD) or a device probe (PROBE)
    dataset: ClassVar[Dataset | None] = None  # what resolve_data locates, or None for no data
    process_ranks: ClassVar[bool] = False  # workload.ranks > 1 means rank processes (suites/guest/ranks.py)
    # Values for a seconds-long run: what ``+preset=smoke`` sets on workload.* (command-line values still win).
    smoke: ClassVar[dict[str, Any]] = {}
    # Python modules the guest imports, each with the extra that installs it (optional parts of the suite).
    requires: ClassVar[dict[str, str]] = {}
    gpu_only: ClassVar[bool] = False  # without a GPU it is a recorded failure saying so (a device probe)

    @classmethod
    def missing(cls) -> list[str]:
        """What ``requires`` names that this Python lacks, as 'module (extra EXTRA)'."""
        import importlib.util

        return [f"{mod} (extra {extra})" for mod, extra in cls.requires.items()
                if importlib.util.find_spec(mod) is None]

    def __init__(self, cfg: Any, ctx: GuestContext) -> None:
        self.cfg = cfg
        self.ctx = ctx

    def require_gpu(self, usable: bool = True) -> None:
        """A ``gpu_only`` workload in a guest without a (``usable``) GPU: one recorded failure saying so."""
        if not self.ctx.gpus or not usable:
            raise BenchError(f"{self.name} needs a GPU and this guest has none (no GPU on the host?)")

    @classmethod
    def resolve_data(cls, cfg: Any, data: Any, base_dir: Any, seed: int) -> dict[str, Any]:
        """Runner-side, before any guest starts: locate (or synthesise) the data; ``cfg`` is the workload's."""
        return cls.dataset.resolve(data, base_dir, seed) if cls.dataset else {}

    def total_steps(self) -> int:
        raise NotImplementedError

    def prepare(self) -> None:
        raise NotImplementedError

    def build(self) -> None:
        """Fresh state for another repeat (model, optimizer); data stays loaded."""

    def train(self, meter: StepMeter) -> None:
        raise NotImplementedError

    def evaluate(self) -> dict[str, float]:
        return {}
