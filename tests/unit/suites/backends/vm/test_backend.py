"""Tests of ``suites/backends/vm/backend.py``."""

from __future__ import annotations

from pathlib import Path

import pytest

from suites.backends.handle import exit_reason
from suites.backends.placement import Placement
from suites.backends.vm import backend
from tests.support.vms import machine


def test_a_vm_run_asking_for_a_driver_without_its_image_is_told_the_build_with_that_driver(tmp_path: Path):
    from suites.backends.vm.backend import image_for
    from suites.config.schema import VmConfig
    from suites.errors import ConfigError

    with pytest.raises(ConfigError, match=r"build it with `make setup-vm VM_DRIVER=open`"):
        image_for(VmConfig(guest_driver="open", image_dir=str(tmp_path / "none")))


def test_a_guest_over_its_vm_memory_is_killed_by_the_vms_kernel_and_said_so(tmp_path: Path):
    """The console of a real 300 MiB TCG VM whose guest allocated 1 GiB (make setup-vm's image, by hand): the
    guest's kernel killed it, init said 137, and that is the guest's recorded reason."""
    m = machine(tmp_path, "tcg", [])
    m.console.write_text("bench-vm: booted in 2.21 s; running /tmp/vmx/oom.sh\n"
                         "[    5.519567] Out of memory: Killed process 107 (python) total-vm:276188kB, "
                         "anon-rss:232424kB, file-rss:4kB, shmem-rss:0kB, UID:0 pgtables:520kB oom_score_adj:0\n"
                         "Killed\nbench-vm: guest exited with code 137\n[    5.61] reboot: Power down\n")
    pipe = backend.VmPipe(m, Placement("g0", [0], [], []), ("qemu", "virtiofsd"), 60)
    assert backend.guest_exit(m.console) == -9
    reason = exit_reason(backend.guest_exit(m.console), pipe.log_tail())
    assert reason == "killed by SIGKILL (the VM's kernel killed it: out of memory (-m 4096 MiB, the profile's memory))"
    assert pipe.rss_MiB() == 0.0  # the runner's RSS check is the host's view; a VM's memory is its hypervisor's
