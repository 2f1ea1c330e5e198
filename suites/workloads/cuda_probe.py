"""gpu_probe's pycuda micro-benchmarks as a guest workload: what does this profile deliver?"""

from __future__ import annotations

from dataclasses import dataclass

from gpu_probe import probe
from gpu_probe.shapes import JsonObject
from suites.errors import BenchError, require
from suites.workloads.base import PROBE, Workload, WorkloadConfig
from suites.workloads.timing import StepMeter


@dataclass
class CudaProbeConfig(WorkloadConfig):
    name: str = "cuda-probe"
    framework: str = "pycuda"
    warmup_steps: int = 0
    size_MiB: int = 256  # buffer per copy probe; three such buffers are live at once

    def check(self) -> None:
        super().check()
        require(self.size_MiB >= 1, "workload.size_MiB", f"must be >= 1, got {self.size_MiB}")


class CudaProbe(Workload):
    name = "cuda-probe"
    config_cls = CudaProbeConfig
    category = PROBE
    gpu_only = True
    smoke = {"size_MiB": 16}
    STEPS = 4  # copies, fp32, fp16, launch latency

    def prepare(self) -> None:
        self.require_gpu()
        reason = probe.unavailable()
        if reason:
            raise BenchError(f"cuda-probe cannot run: {reason}")
        fb = self.ctx.framebuffer_MiB
        if fb is not None and 3 * self.cfg.size_MiB > fb:
            raise BenchError(f"cuda-probe buffers 3 x {self.cfg.size_MiB} MiB exceed the profile framebuffer {fb} MiB "
                             "(lower workload.size_MiB)")

    def total_steps(self) -> int:
        return self.STEPS

    def train(self, meter: StepMeter) -> None:
        self.result: JsonObject = probe.run(device=0, size_MiB=self.cfg.size_MiB, on_step=lambda: meter.step(0))
        self.ctx.info.update({k: v for k, v in self.result.items() if k not in ("metrics", "status")})

    def evaluate(self) -> dict[str, float]:
        if self.result.get("status") != "ok":
            raise BenchError(f"cuda-probe: {self.result.get('reason', self.result.get('status'))}")
        return dict(self.result["metrics"])
