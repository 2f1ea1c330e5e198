"""An idle desktop: a guest that holds its share (vCPUs, memory, a GPU slot) and does nothing for a while.

Density studies count idle desktops too: they take a vGPU slot and memory
while their users are away. It also is the quietest guest there is: it says
nothing between the start barrier and its result, so nothing but the runner's
own mechanisms (a kill on Ctrl-C, the stop at the end, dying with its parent)
ends it early. The fault tests rely on that.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from suites.errors import require
from suites.workloads.base import PROBE, Workload, WorkloadConfig
from suites.workloads.timing import StepMeter


@dataclass
class IdleConfig(WorkloadConfig):
    name: str = "idle"
    framework: str = "none"
    warmup_steps: int = 0
    seconds: float = 30.0  # how long the desktop sits idle after the start barrier

    def check(self) -> None:
        super().check()
        require(0 <= self.seconds <= 86_400, "workload.seconds", f"must be 0..86400, got {self.seconds}")


class Idle(Workload):
    name = "idle"
    config_cls = IdleConfig
    category = PROBE
    smoke = {"seconds": 1.0}

    def prepare(self) -> None:
        self.ctx.info["device"] = "none"  # it runs nothing, on no device

    def total_steps(self) -> int:
        return 1

    def train(self, meter: StepMeter) -> None:
        time.sleep(self.cfg.seconds)  # one silent step: no progress line until it ends
        meter.step(0)
