"""Tests of ``suites/backends/vm/devices.py``."""

from __future__ import annotations

from pathlib import Path

import pytest

from suites.backends.vm import devices
from suites.config.profiles import GpuAccess
from suites.errors import PlacementError
from tests.support.vms import mdev_type, pci_gpu, profile


def test_vfio_passthrough_takes_only_gpus_bound_to_vfio_pci(tmp_path: Path):
    pci_gpu(tmp_path, "0000:3b:00.0", "nvidia")
    pci_gpu(tmp_path, "0000:5e:00.0", "vfio-pci")
    pci_gpu(tmp_path, "0000:86:00.0", "vfio-pci")
    pci_gpu(tmp_path, "0000:00:02.0", "i915", vendor="0x8086")  # not NVIDIA: never counted
    pci_gpu(tmp_path, "0000:af:00.1", "vfio-pci", cls="0x040300")  # the GPU's audio function: not a GPU
    assert [g.driver for g in devices.nvidia_gpus(tmp_path)] == ["nvidia", "vfio-pci", "vfio-pci"]
    args = devices.passthrough_for(profile("passthrough-1gpu", GpuAccess.passthrough), 2, tmp_path)
    assert args == [["host=0000:5e:00.0"], ["host=0000:86:00.0"]]
    with pytest.raises(PlacementError) as exc:
        devices.passthrough_for(profile("passthrough-2gpu", GpuAccess.passthrough, gpus=2), 2, tmp_path)
    assert "need 4 NVIDIA GPU(s) bound to vfio-pci; this host has 2" in str(exc.value)
    assert "0000:3b:00.0 (nvidia)" in str(exc.value)


def test_vgpu_takes_the_mdev_type_named_like_the_profile_one_gpu_first(tmp_path: Path):
    mdev_type(tmp_path, "0000:3b:00.0", "nvidia-17", "GRID M60-4Q", 2)
    mdev_type(tmp_path, "0000:3b:00.0", "nvidia-18", "GRID M60-8Q", 1)
    mdev_type(tmp_path, "0000:5e:00.0", "nvidia-18", "GRID M60-8Q", 1)
    types = devices.vgpu_types_for(profile("m60-8q", GpuAccess.vgpu), 2, tmp_path)
    assert [(t.parent, t.type_id) for t in types] == [("0000:3b:00.0", "nvidia-18"), ("0000:5e:00.0", "nvidia-18")]
    with pytest.raises(PlacementError) as exc:
        devices.vgpu_types_for(profile("m60-8q", GpuAccess.vgpu), 3, tmp_path)
    assert "this host has 2" in str(exc.value) and "GRID M60-4Q, GRID M60-8Q" in str(exc.value)
    with pytest.raises(PlacementError) as exc:
        devices.vgpu_types_for(profile("t4-8q", GpuAccess.vgpu), 1, tmp_path / "none")
    assert "no NVIDIA vGPU manager for KVM" in str(exc.value)


@pytest.mark.parametrize(("profile_name", "type_name", "match"), [
    ("m60-8q", "GRID M60-8Q", True), ("m60-8q", "GRID M60-4Q", False), ("a100-40-10c", "NVIDIA A100-10C", True),
    ("l40s-12q", "NVIDIA L40S-12Q", True), ("m60-1q", "GRID M60-1Q ", True), ("t4-8q", "GRID M60-8Q", False)])
def test_mdev_type_names(profile_name: str, type_name: str, match: bool):
    assert devices.type_matches(profile_name, type_name) is match
