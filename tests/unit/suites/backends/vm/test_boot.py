"""Tests of ``suites/backends/vm/boot.py``."""

from __future__ import annotations

import pytest

from suites.backends.placement import Placement
from suites.backends.vm import boot
from suites.validity import ENFORCED, NOT_ENFORCED, TCG_EMULATION

LINES = ["nvidia module: driver 580.95.05 loaded for 0000:00:05.0",
         "nvidia firmware: GSP firmware 580.95.05 running (nvidia-smi -q)",
         "nvidia-smi: GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-1b7c2c1e-0d43-4a6e-9e1e-8d5b0e1f2a33)",
         "nvidia EGL: vendor file /run/nvidia/egl_vendor.d/10_nvidia.json, library /run/nvidia/lib/libEGL_nvidia.so.0"]


STARTED = {"ok": True, "devices": 1, "driver_cuda": "13.0", "text": "initialised: 1 device (driver CUDA 13.0)"}


NO_DEVICE = {"ok": False, "devices": 0, "driver_cuda": "12.2", "error": "CUDA_ERROR_NO_DEVICE",
             "text": "no device (cuInit: CUDA_ERROR_NO_DEVICE: no CUDA-capable device is detected; driver CUDA 12.2)"}


def placed(gpus: list[str], validity: str = ENFORCED) -> Placement:
    return Placement("g0", [0], [0] if gpus else [], gpus, "VM (KVM, 4 vCPUs); VFIO passthrough 0000:3b:00.0",
                     validity=validity)


def test_a_gpu_guest_whose_cuda_started_stays_enforced_and_its_note_says_all_four():
    p = placed(["0"])
    boot.apply(p, {"lines": LINES, "cuda": STARTED})
    assert p.validity == ENFORCED and p.reason == ""
    assert p.note.endswith("; boot: " + "; ".join(LINES) + "; CUDA: initialised: 1 device (driver CUDA 13.0)")


@pytest.mark.parametrize("cuda, why", [
    (NO_DEVICE, "CUDA did not start in the VM: no device (cuInit: CUDA_ERROR_NO_DEVICE"),
    ({**STARTED, "devices": 1}, None),
    ({}, "CUDA did not start in the VM: the guest did not say"),
])
def test_a_gpu_guest_whose_cuda_did_not_start_is_not_enforced_with_the_reason(cuda: dict, why: str | None):
    p = placed(["0", "1"] if why is None else ["0"])  # two GPUs given, one device seen: not its profile
    boot.apply(p, {"lines": LINES[:1], "cuda": cuda})
    assert p.validity == NOT_ENFORCED
    assert p.reason.startswith(why or "CUDA did not start in the VM: initialised: 1 device")


def test_a_guest_without_a_gpu_keeps_its_validity_and_a_tcg_reason_stays_the_reason():
    cpu = placed([])
    boot.apply(cpu, {"lines": [], "cuda": NO_DEVICE})
    assert cpu.validity == ENFORCED and cpu.note == placed([]).note  # no driver, no GPU: nothing to say
    tcg = Placement("g0", [0], [0], ["0"], "VM", validity=NOT_ENFORCED, reason=TCG_EMULATION)
    boot.apply(tcg, {"lines": LINES[:1], "cuda": NO_DEVICE})
    assert tcg.reason == TCG_EMULATION and "CUDA: no device" in tcg.note
