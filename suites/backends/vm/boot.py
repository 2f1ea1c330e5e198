"""What a VM's boot said of its GPU, into its guest's placement: the note carries the driver's module, firmware,
``nvidia-smi`` and EGL lines (init.sh) and CUDA's answer inside the VM (suites/guest/vm.py), and a guest placed on
a GPU is enforced only where CUDA started there on as many devices as it was given."""

from __future__ import annotations

from typing import Any

from suites.backends.placement import Placement
from suites.validity import NOT_ENFORCED

__all__ = ["apply", "cuda_started"]


def cuda_started(cuda: dict[str, Any], gpus: int) -> bool:
    return bool(cuda.get("ok")) and int(cuda.get("devices") or 0) >= gpus


def apply(placement: Placement, gpu_boot: dict[str, Any] | None) -> None:
    """``placement``'s note and validity after its VM booted (``gpu_boot``: the boot event's record)."""
    boot = gpu_boot or {}
    lines = [str(line) for line in boot.get("lines") or []]
    cuda = dict(boot.get("cuda") or {})
    said = lines + ([f"CUDA: {cuda['text']}"] if cuda.get("text") and (lines or placement.gpus) else [])
    if said:
        placement.note += "; boot: " + "; ".join(said)
    if placement.gpus and placement.validity != NOT_ENFORCED and not cuda_started(cuda, len(placement.gpus)):
        placement.validity = NOT_ENFORCED
        placement.reason = f"CUDA did not start in the VM: {cuda.get('text') or 'the guest did not say'}"
