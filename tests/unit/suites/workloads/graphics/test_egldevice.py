"""Tests of ``suites/workloads/graphics/egldevice.py``."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from suites.workloads.base import GuestContext
from suites.workloads.graphics import egldevice
from tests.support.fakes import vendor


def test_only_mesa_listed_is_said_with_the_fix_before_any_guest(tmp_path: Path):
    vendor(tmp_path, "50_mesa.json", "libEGL_mesa.so.0")
    problem = egldevice.nvidia_egl_problem({"__EGL_VENDOR_LIBRARY_DIRS": str(tmp_path)})
    assert problem is not None and problem.startswith("no NVIDIA EGL vendor library (EGL vendors found: "
                                                      "libEGL_mesa.so.0)")
    assert "NVIDIA_DRIVER_CAPABILITIES=compute,utility,graphics" in problem
    named = vendor(tmp_path / "nv", "10_nvidia.json", str(tmp_path / "libEGL_nvidia.so.0"))
    problem = egldevice.nvidia_egl_problem({"__EGL_VENDOR_LIBRARY_FILENAMES": str(named)})
    assert problem is not None and "which does not load" in problem  # the file is there, its library is not
    lib = Path(next(p for p in ("/lib/x86_64-linux-gnu/libm.so.6", "/usr/lib/x86_64-linux-gnu/libm.so.6")
                    if Path(p).exists()))
    shutil.copy(lib, tmp_path / "libEGL_nvidia.so.0")  # a loadable library in its place
    assert egldevice.nvidia_egl_problem({"__EGL_VENDOR_LIBRARY_FILENAMES": str(named)}) is None


def test_egl_device_is_the_guests_gpu_by_uuid_or_pci_never_device_0():
    from suites.workloads.graphics.egldevice import EglDevice, EglDeviceError, choose, pci_key, uuid_text

    raw = bytes.fromhex("11111111222233334444555555555555")
    assert uuid_text(raw) == "GPU-11111111-2222-3333-4444-555555555555"
    assert pci_key("00000000:3B:00.0") == pci_key("0000:3b:00.0") == "0000:3b:00.0"
    devices = [EglDevice(0, "GPU-aaaaaaaa-0000-0000-0000-000000000000", "0000:18:00.0", "/dev/dri/card0"),
               EglDevice(1, uuid_text(raw), "0000:3b:00.0", "/dev/dri/card1"),
               EglDevice(2, None, None, None)]  # Mesa's software device
    assert choose(devices, "GPU-11111111-2222-3333-4444-555555555555", None) == (
        1, "EGL device 1: UUID GPU-11111111-2222-3333-4444-555555555555")
    no_uuid = [EglDevice(d.index, None, d.pci, d.drm) for d in devices]  # a driver without persistent ids
    assert choose(no_uuid, "GPU-11111111-2222-3333-4444-555555555555", "00000000:3B:00.0")[0] == 1
    with pytest.raises(EglDeviceError, match="no EGL device is the guest's GPU GPU-ffff"):
        choose(devices, "GPU-ffff", "00000000:AF:00.0")


def test_a_cad_guest_in_a_vm_names_its_gpu_by_index_through_nvml_and_picks_that_egl_device(
        monkeypatch: pytest.MonkeyPatch):
    """Inside a VM the guest's GPU is "0" (the VM's own, numbered from 0): NVML's device of that index gives its UUID
    and PCI address, and the EGL device is matched by them as on a host, not taken by EGL's own numbering. No GPU
    here: a recorded vGPU guest's NVML answers stand in for the VM's driver, and the EGL device list for its EGL."""
    from gpu_probe.trace import TRACE_ENV
    from suites.workloads.graphics import egldevice
    from suites.workloads.graphics.egldevice import EglDevice
    from suites.workloads.graphics.replay import GraphicsReplay, GraphicsReplayConfig
    from tests.support.helpers import REPO

    monkeypatch.setenv(TRACE_ENV, str(REPO / "tests" / "traces" / "m60-8q-vgpu-guest.json"))
    listed = [EglDevice(0, None, None, None),  # Mesa's software device comes first
              EglDevice(1, "GPU-5e1a7c3b-0000-4c2d-9e8f-0a1b2c3d4e58", "0000:02:01.0", "/dev/dri/card0")]
    monkeypatch.setattr(egldevice, "list_devices", lambda libegl=None: listed)
    ctx = GuestContext("g0", [0], ["0"], None, {}, 0)
    assert GraphicsReplay(GraphicsReplayConfig(), ctx).egl_device() == 1
    assert ctx.info["egl_device"] == "EGL device 1: UUID GPU-5e1a7c3b-0000-4c2d-9e8f-0a1b2c3d4e58"
