"""Tests of ``suites/backends/vm/qemu.py``."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from suites.backends.placement import Placement
from suites.backends.vm import backend, qemu
from tests.support.vms import IMAGE, MISSING, machine

needs_vm = pytest.mark.skipif(bool(MISSING), reason=f"no VM set-up here ({MISSING}): make setup-vm")


UUID = "8f1f6a5e-0c1d-4a53-9d0e-1a2b3c4d5e6f"


def test_qemu_command_line_gives_the_profile_and_its_devices(tmp_path: Path):
    argv = qemu.qemu_argv(machine(tmp_path, "kvm", ["host=0000:5e:00.0", f"sysfsdev=/sys/bus/mdev/devices/{UUID}"]))
    line = " ".join(argv)
    assert argv[argv.index("-smp") + 1] == "2" and argv[argv.index("-m") + 1] == "4096M"
    assert "-accel kvm -cpu host" in line and "memory-backend-memfd,id=mem,size=4096M,share=on" in line
    assert "-device vfio-pci,host=0000:5e:00.0" in line
    assert f"-device vfio-pci,sysfsdev=/sys/bus/mdev/devices/{UUID}" in line
    assert f"bench.boot={tmp_path / 'g0.sh'}" in line and "virtserialport,chardev=proto,name=bench" in line
    tcg = " ".join(qemu.qemu_argv(machine(tmp_path, "tcg", [])))
    assert f"-accel tcg,tb-size={qemu.TCG_CACHE_MiB} -cpu max" in tcg and "vfio-pci" not in tcg and "-netdev" not in tcg


@pytest.mark.heavy
@needs_vm
def test_auto_accel_tries_kvm_and_falls_back_to_tcg_on_this_host():
    t0 = time.monotonic()
    accel = qemu.choose_accel("auto", IMAGE, qemu.tools()[0], probe_s=8)  # a hung nested KVM spins a core so long
    assert time.monotonic() - t0 < 8 + 5
    if accel.name == "tcg":  # this host: /dev/kvm opens, but its nested KVM runs no guest
        assert "KVM" in accel.note, accel.note
    assert qemu.choose_accel("tcg", IMAGE, "unused", 5) == qemu.Accel("tcg", "vm.accel=tcg")


def test_a_vm_that_ends_before_its_guest_reports_says_qemus_own_words(tmp_path: Path):
    """QEMU's errors start "qemu-system-x86_64:" or, for a kernel it cannot load, "qemu:"."""
    machine = qemu.Machine("g0", 1, 512, "tcg", None, tmp_path / "g0.vm.sh", tmp_path / "fs", tmp_path / "qmp",
                           tmp_path / "g0.log")  # type: ignore[arg-type]
    machine.console.write_text("")
    machine.console.with_suffix(".qemu.log").write_text("qemu: linux kernel too old to load a ram disk\n")
    pipe = backend.VmPipe(machine, Placement("g0", [0], [], []), ("qemu", "virtiofsd"), 10.0)
    assert pipe.log_tail() == ("the VM ended before its guest reported; "
                               "QEMU: qemu: linux kernel too old to load a ram disk")
