"""A stand-in training loop whose step takes a set time: ``workload=fixed-step workload.step_ms=0.5``.

It trains nothing; each step sleeps ``step_ms`` and reports ``batch_size`` images. With it, what the harness does
around a training loop can be seen on any host at any speed: a 0.5 ms step stands in for a GPU, 50 ms for a
2-core CPU. A run sized by time (suites/workloads/timing.py), a mixed scenario's overlap, and the harness's own cost are
tested with it. With ``workload.ranks`` > 1 each rank is a process of its own (as the torch workloads' ranks), so
the ranks' agreement on their sizes is exercised too.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

from suites.errors import require
from suites.workloads.base import ML, TrainConfig, Workload
from suites.workloads.timing import StepMeter


@dataclass
class FixedStepConfig(TrainConfig):
    name: str = "fixed-step"
    framework: str = "none"
    step_ms: float = 50.0  # each step's time
    images: int = 60_000  # an epoch's images (with batch_size, how many steps an epoch is)

    def check(self) -> None:
        super().check()
        require(0 < self.step_ms <= 60_000 and math.isfinite(self.step_ms), "workload.step_ms",
                f"must be milliseconds in (0, 60000], got {self.step_ms}")
        require(self.images >= 1, "workload.images", f"must be >= 1, got {self.images}")


class FixedStep(Workload):
    name = "fixed-step"
    config_cls = FixedStepConfig
    category = ML
    process_ranks = True
    smoke = {"min_window_s": 0.5, "step_ms": 5.0}
    preload = ()  # forked as the torch workloads are: the harness's path at a GPU's speed, tested with it

    def prepare(self) -> None:
        self.ctx.info["device"] = "none"  # it sleeps: no device does its work

    def total_steps(self) -> int:
        per_rank = max(1, self.cfg.images // self.ctx.world_size)
        return self.sized_steps or self.cfg.total_steps(per_rank)

    def train(self, meter: StepMeter) -> None:
        total, step_s = self.total_steps(), self.cfg.step_ms / 1e3
        while not meter.over(total):
            time.sleep(step_s)
            meter.step(self.cfg.batch_size * self.ctx.world_size)  # images across all ranks
