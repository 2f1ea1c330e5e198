"""Host and GPU inventory: the provenance stored with every result."""

from __future__ import annotations

import os
import platform
import socket
import subprocess
from dataclasses import asdict, dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

import psutil

from gpu_probe import virtualization, vocab
from gpu_probe.nvml import NA, Nvml
from gpu_probe.shapes import JsonObject

# Distributions whose versions explain a result; read from metadata, never imported.
TRACKED_LIBRARIES = (
    "torch", "torchvision", "tensorflow", "tensorflow-cpu", "keras", "numpy",
    "mlflow", "hydra-core", "omegaconf", "nvidia-ml-py", "psutil", "moderngl", "ray",
)


@dataclass
class Inventory:
    hostname: str
    os: str
    python: str
    cpu_model: str
    cpu_logical: int
    cpu_physical: int
    cpus_usable: int  # cores this process may run on (affinity / cgroup cpuset)
    mem_total_MiB: float
    gpus: list[JsonObject] = field(default_factory=list)
    driver_version: str | None = None
    cuda_driver_version: str | None = None
    gpu_status: str = vocab.NO_GPU
    git_sha: str = "unknown"
    libraries: dict[str, str] = field(default_factory=dict)

    @property
    def has_gpu(self) -> bool:
        return bool(self.gpus)

    def as_dict(self) -> JsonObject:
        return asdict(self)

    def as_params(self) -> dict[str, str]:
        """Flat ``host.*`` / ``lib.*`` keys for MLflow params."""
        out = {f"host.{k}": str(v) for k, v in asdict(self).items() if k not in ("gpus", "libraries")}
        out["host.gpu_count"] = str(len(self.gpus))
        out["host.gpu_names"] = ", ".join(g["name"] for g in self.gpus) or vocab.NO_GPU
        out.update({f"lib.{k}": v for k, v in self.libraries.items()})
        return out


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def git_sha(repo: Path | None = None) -> str:
    """HEAD's SHA, with ``-dirty`` when the tree has uncommitted changes."""
    cwd = repo or Path(__file__).resolve().parent.parent
    try:
        sha = subprocess.run(["git", "rev-parse", "HEAD"], cwd=cwd, capture_output=True, text=True, timeout=5)
        if sha.returncode != 0:
            return "unknown"
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=cwd,
                               capture_output=True, text=True, timeout=5)
        return sha.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "")
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def library_versions() -> dict[str, str]:
    out = {}
    for name in TRACKED_LIBRARIES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return out


def collect(nvml: Nvml | None = None) -> Inventory:
    """Inventory of this host; GPU fields come from NVML when it is there."""
    own = nvml is None
    nv = Nvml().open() if own else nvml
    try:
        inv = Inventory(
            hostname=socket.gethostname(),
            os=f"{platform.system()} {platform.release()}",
            python=platform.python_version(),
            cpu_model=cpu_model(),
            cpu_logical=psutil.cpu_count(logical=True) or 1,
            cpu_physical=psutil.cpu_count(logical=False) or 1,
            cpus_usable=len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1,
            mem_total_MiB=round(psutil.virtual_memory().total / vocab.MiB, 1),
            git_sha=git_sha(),
            libraries=library_versions(),
        )
        if not nv.available:
            inv.gpu_status = nv.reason
            return inv
        inv.gpus = [{**nv.device_info(i), **virtualization.describe(nv, i)} for i in range(nv.device_count())]
        system = nv.system_info()
        inv.driver_version = None if system["driver_version"] is NA else system["driver_version"]
        inv.cuda_driver_version = None if system["cuda_driver_version"] is NA else system["cuda_driver_version"]
        inv.gpu_status = f"{len(inv.gpus)} GPU(s)" if inv.gpus else f"{vocab.NO_GPU}: NVML sees no device"
        # NA is not JSON; missing device fields become None.
        inv.gpus = [_json_safe(g) for g in inv.gpus]
        return inv
    finally:
        if own:
            nv.close()


def _json_safe(value: Any) -> Any:
    """NA is not JSON: missing fields become None, bytes become text, recursively."""
    if value is NA:
        return None
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_json_safe(v) for v in value]
    return value.decode() if isinstance(value, bytes) else value
