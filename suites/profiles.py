"""Guest profiles: what a guest (the suite's VM) gets from the host.

A profile is passthrough (whole GPUs), vGPU (a framebuffer slice of one GPU,
shared by up to ``max_per_gpu`` guests) or cpu (no GPU). Values live in
``configs/profile/*.yaml``; this module owns the schema.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Optional

from hydra.core.config_store import ConfigStore
from omegaconf import MISSING

from suites.errors import require


class ProfileKind(Enum):
    cpu = "cpu"
    passthrough = "passthrough"
    vgpu = "vgpu"


@dataclass
class ProfileConfig:
    name: str = MISSING
    kind: ProfileKind = MISSING
    gpus: int = 0  # physical GPUs per guest (passthrough) or 1 for a vGPU slice
    framebuffer_MiB: Optional[int] = None  # vGPU framebuffer cap; None = the whole GPU
    max_per_gpu: int = 1  # guests that may share one physical GPU
    vcpus: int = 2
    memory_MiB: int = 8192
    gpu_model: Optional[str] = None  # the profile's native GPU, e.g. "Tesla M60"

    def check(self) -> None:
        require(self.vcpus >= 1, "profile.vcpus", f"must be >= 1, got {self.vcpus}")
        require(self.memory_MiB >= 256, "profile.memory_MiB", f"must be >= 256, got {self.memory_MiB}")
        require(self.gpus >= 0, "profile.gpus", f"must be >= 0, got {self.gpus}")
        require(self.max_per_gpu >= 1, "profile.max_per_gpu", f"must be >= 1, got {self.max_per_gpu}")
        if self.kind is ProfileKind.cpu:
            require(self.gpus == 0, "profile.gpus", "a cpu profile has no GPU")
        else:
            require(self.gpus >= 1, "profile.gpus", f"a {self.kind.value} profile needs >= 1 GPU")
        if self.kind is ProfileKind.vgpu:
            require(self.gpus == 1, "profile.gpus", "a vGPU is a slice of exactly one GPU")
            require(self.framebuffer_MiB is not None and self.framebuffer_MiB > 0,
                    "profile.framebuffer_MiB", "a vGPU profile needs a positive framebuffer")
        elif self.framebuffer_MiB is not None:
            require(self.framebuffer_MiB > 0, "profile.framebuffer_MiB",
                    f"must be > 0, got {self.framebuffer_MiB}")


ConfigStore.instance().store(group="profile", name="base_profile", node=ProfileConfig)
