"""A guest that takes device memory until its framebuffer cap refuses more, and holds it: does the cap hold, and
at what a vGPU would count (``make gpu-check`` c1)?

It allocates ``chunk_MiB`` blocks on its GPU, halving the block each time the
cap refuses one, down to 1 MiB, so it ends within a MiB of what the cap allows;
then it holds all of it for ``hold_s`` seconds, long enough for the sampler's
NVML readings to see the peak. It reports what it held (``filled_MiB``) and what
torch's allocator had reserved; the whole device footprint (CUDA context
included) is NVML's per-guest figure, sampled by the runner.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from suites.errors import require
from suites.workloads.base import PROBE, Workload, WorkloadConfig
from suites.workloads.device_memory import self_reported
from suites.workloads.timing import StepMeter
from suites.workloads.torch_common import cap_framebuffer


@dataclass
class MemoryFillConfig(WorkloadConfig):
    name: str = "memory-fill"
    framework: str = "torch"
    warmup_steps: int = 0
    chunk_MiB: int = 64  # the first block size; halved at each refusal down to 1 MiB
    hold_s: float = 3.0  # how long the filled memory is held (a few of the sampler's periods)

    def check(self) -> None:
        super().check()
        require(1 <= self.chunk_MiB <= 65536, "workload.chunk_MiB", f"must be 1..65536, got {self.chunk_MiB}")
        require(0 <= self.hold_s <= 600, "workload.hold_s", f"must be 0..600, got {self.hold_s}")


class MemoryFill(Workload):
    name = "memory-fill"
    config_cls = MemoryFillConfig
    category = PROBE
    gpu_only = True
    smoke = {"hold_s": 0.5}

    def prepare(self) -> None:
        import torch

        self.require_gpu(torch.cuda.is_available())
        self.device = torch.device("cuda", 0)
        torch.cuda.set_device(self.device)
        self.ctx.info["device"] = torch.cuda.get_device_name(self.device)
        self.ctx.info.update(cap_framebuffer(torch, self.device, self.ctx.framebuffer_MiB))

    def total_steps(self) -> int:
        return 1

    def train(self, meter: StepMeter) -> None:
        import torch

        held, chunk = [], self.cfg.chunk_MiB
        while chunk >= 1:
            try:
                held.append(torch.empty(chunk * 2**20, dtype=torch.uint8, device=self.device))
            except torch.cuda.OutOfMemoryError:  # the cap (or the GPU) refused this block: finer blocks
                chunk //= 2
        torch.cuda.synchronize(self.device)
        self.filled_MiB = sum(t.numel() for t in held) / 2**20
        self.reserved_MiB = torch.cuda.memory_reserved(self.device) / 2**20
        time.sleep(self.cfg.hold_s)
        meter.step(0)
        del held
        torch.cuda.empty_cache()

    def evaluate(self) -> dict[str, float]:
        return {"filled_MiB": self.filled_MiB, "reserved_MiB": self.reserved_MiB,
                **self_reported(self.reserved_MiB, self.reserved_MiB, self.ctx.info.get("cuda_context_MiB"))}
