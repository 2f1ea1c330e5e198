"""suites/backends/vm/cudaver.py: which CUDA a VM image's driver serves, which the guest's frameworks need, and the
one line that refuses a driver too old for them."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from suites.backends.vm import cudaver
from suites.errors import ConfigError


@pytest.mark.parametrize("driver, cuda", [("535.261.03", "12.2"), ("550.163.01", "12.4"), ("555.58.02", "12.5"),
                                          ("580.95.05", "13.0"), ("590.44.01", "13.1"), ("440.33", "")])
def test_nvidias_table_gives_each_branch_its_cuda(driver: str, cuda: str):
    assert cudaver.branch_cuda(driver) == cuda


def test_a_libcudas_own_banner_wins_over_the_table(tmp_path: Path):
    lib = tmp_path / "libcuda.so.535.261.03"
    lib.write_bytes(b"\x7fELF...\0Cuda compilation tools, release 12.2, V12.2.149\0...")
    assert cudaver.driver_cuda(lib, "535.261.03") == ("12.2", "read from libcuda.so.535.261.03")
    lib.write_bytes(b"\x7fELF without a banner")
    assert cudaver.driver_cuda(lib, "550.163.01") == ("12.4", "NVIDIA's table for the 550 branch")
    assert cudaver.driver_cuda(None, "580.95.05") == ("13.0", "NVIDIA's table for the 580 branch")


def test_a_550_driver_is_refused_for_a_cu130_torch_and_a_580_one_accepted():
    needs = {"torch": "13.0"}
    assert cudaver.mismatch("550.163.01", "12.4", needs, "VM_DRIVER") == (
        "driver 550.163.01 supports CUDA 12.4; this torch needs CUDA 13.0 (driver >= 580): pass "
        "VM_DRIVER=<NVIDIA-Linux-x86_64-580 or newer .run>")
    with pytest.raises(ConfigError, match="^driver 535.261.03 supports CUDA 12.2; this torch needs CUDA 13.0"):
        cudaver.check("535.261.03", "12.2", needs, "VM_DRIVER")
    cudaver.check("580.95.05", "13.0", needs, "VM_DRIVER")  # accepted
    cudaver.check("535.261.03", "12.2", {}, "VM_DRIVER")  # a CPU-only guest needs no CUDA
    assert cudaver.mismatch("590.44.01", "13.1", needs, "VM_DRIVER") == ""


def test_the_newest_need_is_named_and_a_newer_minor_is_said_not_refused():
    needs = {"tensorflow": "12.5", "torch": "13.0"}
    assert "this torch needs CUDA 13.0" in cudaver.mismatch("550.163.01", "12.4", needs, "vm.guest_driver")
    assert cudaver.mismatch("535.261.03", "12.2", {"tensorflow": "12.5"}, "VM_DRIVER") == ""
    assert cudaver.minor_note("12.2", {"tensorflow": "12.5"}) == (
        "tensorflow (CUDA 12.5) on a CUDA 12.2 driver by minor-version compatibility (PTX built for the newer minor "
        "is not JIT-compiled)")
    assert cudaver.minor_note("13.0", {"torch": "13.0"}) == ""
    old = cudaver.mismatch("470.1", "11.4", {"tensorflow": "12.5"}, "VM_DRIVER")
    assert "this tensorflow needs CUDA 12.5 (driver >= 525)" in old


def test_the_guests_needs_are_read_from_the_installed_files_without_importing(tmp_path: Path,
                                                                                 monkeypatch: pytest.MonkeyPatch):
    site = tmp_path / "site"
    (site / "torch").mkdir(parents=True)
    (site / "torch" / "__init__.py").write_text("raise SystemExit('imported')\n")
    (site / "torch" / "version.py").write_text("from typing import Optional\n__version__ = '2.14.1'\n"
                                               "cuda: Optional[str] = '13.0'\n")
    tf = site / "tensorflow" / "python" / "platform"
    tf.mkdir(parents=True)
    (site / "tensorflow" / "__init__.py").write_text("raise SystemExit('imported')\n")
    (tf / "build_info.py").write_text("build_info = collections.OrderedDict([('cuda_version', '12.5.1'), "
                                      "('is_cuda_build', True)])\n")
    monkeypatch.setattr(sys, "path", [str(site), *sys.path])
    for name in ("torch", "tensorflow"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    assert cudaver.guest_needs() == {"torch": "13.0", "tensorflow": "12.5"}
    (site / "torch" / "version.py").write_text("cuda: Optional[str] = None\n")  # a CPU build
    (tf / "build_info.py").write_text("build_info = collections.OrderedDict([('is_cuda_build', False)])\n")
    assert cudaver.guest_needs() == {}


def test_this_venvs_torch_is_read_as_torch_itself_says():
    import torch

    assert cudaver.guest_needs().get("torch") == (".".join(torch.version.cuda.split(".")[:2]) if torch.version.cuda
                                                  else None)
