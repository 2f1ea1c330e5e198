"""Tests of ``gpu_probe/virtualization.py``: MIG devices, a vGPU host's scheduler and vGPUs, a vGPU guest's view,
read from recorded NVML traces."""

from __future__ import annotations

import math

import pytest

from gpu_probe import inventory
from tests.support.traces import replay, sample


def test_mig_host():
    with replay("a100-mig") as nv:
        gpu = inventory.collect(nv).gpus[0]
    assert gpu["mig_mode"] == "enabled"
    assert [m["name"] for m in gpu["mig_devices"]] == ["NVIDIA A100-SXM4-40GB MIG 3g.20gb"] * 2
    assert [m["gpu_instance_id"] for m in gpu["mig_devices"]] == [1, 2]
    assert gpu["mig_devices"][0]["mem_total_MiB"] == pytest.approx(19968)
    assert math.isnan(sample("a100-mig").rows[0]["gpu0.util_pct"])  # not supported in MIG mode


def test_vgpu_host():
    with replay("m60-vgpu-host") as nv:
        gpu = inventory.collect(nv).gpus[0]
    assert gpu["virtualization_mode"] == "vgpu-host" and gpu["vgpu_scheduler"] == "best-effort"
    assert [(v["type_name"], v["type_framebuffer_MiB"], v["type_max_instances"]) for v in gpu["vgpus"]] == \
        [("GRID M60-2Q", 2048, 4)] * 2
    assert [v["fb_used_MiB"] for v in gpu["vgpus"]] == [768, 1280]
    assert [v["vm_id"] for v in gpu["vgpus"]] == ["cad-desktop-1", "mnist-trainer"]
    agg = sample("m60-vgpu-host").aggregate("gpu0.")
    assert agg["vgpu7.util_pct.mean"] == 35 and agg["vgpu8.util_pct.mean"] == 36
    assert agg["vgpu8.mem_used_MiB.max"] == 1280


def test_a_vgpu_guest_asks_for_its_scheduler_and_gets_none():
    """Inside a vGPU VM NVML does not answer for the hypervisor's scheduler: asked (a fleet sizing records what the
    VM could see), it is N/A, never a policy guessed."""
    with replay("m60-4q-vgpu-guest") as nv:
        gpu = inventory.collect(nv).gpus[0]
    assert gpu["virtualization_mode"] == "vgpu-guest" and gpu["vgpu_scheduler"] is None  # NA, as JSON
