"""Guest profiles: what a guest (the suite's VM) gets from the host.

A profile's ``gpu_access`` is passthrough (whole GPUs), vGPU (a framebuffer slice
of one GPU, shared by up to ``max_per_gpu`` guests) or cpu (no GPU). Values live in
``configs/profile/*.yaml``; this module owns the schema (registered by
:func:`suites.config.schema.register_configs`).
"""

from __future__ import annotations

import re
import warnings
from dataclasses import dataclass
from enum import Enum
from typing import Optional

from omegaconf import MISSING, DictConfig, read_write

from gpu_probe.datasheet import LARGEST_MiB, memory_MiB
from suites.errors import RenamedSetting, require

SCHEDULERS = ("best-effort", "equal-share", "fixed-share", "mig")
FAMILY = re.compile(r"\b([A-Z]\d{1,3}[A-Z]?)\b")  # M60, T4, A100, H100, L40S
def family(model: str | None) -> str | None:
    """The GPU family token of a model name: 'NVIDIA H100 80GB HBM3' -> 'H100'."""
    m = FAMILY.search((model or "").upper().replace("-", " "))
    return m.group(1) if m else None


class GpuAccess(Enum):
    """How a profile's guest gets its GPU (``profile.gpu_access``; ``profile.kind`` until issue 75: read for a
    release)."""

    cpu = "cpu"
    passthrough = "passthrough"
    vgpu = "vgpu"


@dataclass
class ProfileConfig:
    name: str = MISSING
    gpu_access: Optional[GpuAccess] = None  # cpu, passthrough or vgpu: required (None only while kind is read)
    gpus: int = 0  # physical GPUs per guest (passthrough) or 1 for a vGPU slice
    framebuffer_MiB: Optional[int] = None  # vGPU framebuffer cap; None = the whole GPU
    max_per_gpu: int = 1  # guests that may share one physical GPU
    vcpus: int = 2
    memory_MiB: int = 8192
    gpu_model: Optional[str] = None  # the profile's native GPU, e.g. "Tesla M60"
    scheduler: str = "best-effort"  # vGPU time-slice scheduler, or "mig" for a spatial (MIG-backed) slice
    mig_slices: Optional[int] = None  # MIG compute slices of 7 (mig scheduler only)
    mps_share_pct: Optional[int] = None  # CUDA MPS compute share per guest, applied only if a daemon runs
    kind: Optional[GpuAccess] = None  # the old name of gpu_access ("kind" is a run's kind): read for a release, said

    def __post_init__(self) -> None:
        if self.kind is not None:
            warnings.warn("profile.kind is profile.gpu_access now (the old name is read until the next release)",
                          RenamedSetting, stacklevel=2)
            self.gpu_access, self.kind = self.kind, None  # given, as a scenario.study key is: it wins

    def check(self) -> None:
        require(self.gpu_access is not None, "profile.gpu_access",
                f"must be one of {', '.join(s.value for s in GpuAccess)}, got none")
        require(self.vcpus >= 1, "profile.vcpus", f"must be >= 1, got {self.vcpus}")
        require(self.memory_MiB >= 256, "profile.memory_MiB", f"must be >= 256, got {self.memory_MiB}")
        require(self.gpus >= 0, "profile.gpus", f"must be >= 0, got {self.gpus}")
        require(self.max_per_gpu >= 1, "profile.max_per_gpu", f"must be >= 1, got {self.max_per_gpu}")
        if self.gpu_access is GpuAccess.cpu:
            require(self.gpus == 0, "profile.gpus", "a cpu profile has no GPU")
        else:
            require(self.gpus >= 1, "profile.gpus", f"a {self.gpu_access.value} profile needs >= 1 GPU")
        require(self.scheduler in SCHEDULERS, "profile.scheduler", f"must be one of {', '.join(SCHEDULERS)}")
        if self.scheduler == "mig":
            require(self.mig_slices is not None and 1 <= self.mig_slices <= 7, "profile.mig_slices",
                    "a MIG-backed profile needs 1..7 compute slices")
        require(self.mps_share_pct is None or 1 <= self.mps_share_pct <= 100, "profile.mps_share_pct",
                "must be 1..100")
        if self.gpu_access is GpuAccess.vgpu:
            require(self.gpus == 1, "profile.gpus", "a vGPU is a slice of exactly one GPU")
            require(self.framebuffer_MiB is not None and self.framebuffer_MiB > 0,
                    "profile.framebuffer_MiB", "a vGPU profile needs a positive framebuffer")
        elif self.framebuffer_MiB is not None:
            require(self.framebuffer_MiB > 0, "profile.framebuffer_MiB",
                    f"must be > 0, got {self.framebuffer_MiB}")
        if self.framebuffer_MiB is not None:
            limit = memory_MiB(self.gpu_model)  # gpu_probe's datasheet: the one GPU table
            where = f"the {self.gpu_model}'s" if limit else "the largest known GPU's"
            limit = limit or LARGEST_MiB
            require(self.framebuffer_MiB <= limit, "profile.framebuffer_MiB",
                    f"{self.framebuffer_MiB} MiB is more than {where} {limit} MiB")


def settle(node: DictConfig, profile: ProfileConfig) -> None:
    """The composed profile node as its dataclass read it: the GPU access given under the old name ``kind`` is in the
    node under ``gpu_access``, so a run's params record it (under both names: ``config.scenario.RENAMED``)."""
    with read_write(node):
        node.gpu_access, node.kind = profile.gpu_access.value if profile.gpu_access else None, None


def type_matches(profile_name: str, type_name: str) -> bool:
    """'GRID M60-8Q' / 'NVIDIA A100-10C' / 'NVIDIA H100-3-40C' is profile m60-8q / a100-40-10c / h100-mig-3-40c (the
    suite's names carry the framebuffer size where a GPU comes in two, and "mig" for a MIG-backed type; NVIDIA's type
    names do neither)."""
    bare = re.sub(r"^(GRID|NVIDIA)\s+", "", type_name.strip(), flags=re.IGNORECASE).lower()
    name = profile_name.lower()
    return bare in {n.replace("-mig-", "-") for n in (name, re.sub(r"^([a-z0-9]+)-\d+-", r"\1-", name))}
