"""Tests of ``suites/backends/vm/image.py``."""

from __future__ import annotations

from pathlib import Path

import pytest

from suites.backends.vm import image, nvidia
from suites.errors import ConfigError
from tests.support.driver_runs import GOOD, build_with, cpio_list, driver_members, fake_debian, makeself_run, run_file


def test_initramfs_is_newc_with_every_file_aligned():
    blob = image.newc([("init", 0o100755, b"#!/bin/sh\n"), ("lib", 0o040755, b"")])
    assert blob.startswith(b"070701") and len(blob) % 4 == 0
    assert blob.count(b"070701") == 3 and b"TRAILER!!!" in blob and b"#!/bin/sh\n" in blob


def test_an_image_build_refuses_a_fake_run_before_downloading_anything(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(image, "versioned_kernel_package", lambda: pytest.fail("downloaded before the check"))
    fake = run_file(tmp_path, GOOD, b"not a driver")
    with pytest.raises(ConfigError, match="not a makeself archive"):
        image.build(tmp_path / "img", str(fake))
    assert not (tmp_path / "img").exists()
    assert image.main(["--driver", str(fake), str(tmp_path / "img")]) == 2


def test_a_failed_driver_build_leaves_the_working_image_in_place(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A failed build leaves the working image in place (image.json is replaced only once the new image is built)."""
    monkeypatch.setattr(image, "versioned_kernel_package", lambda: "linux-image-6.1.0-56-cloud-amd64")
    monkeypatch.setattr(image.apt, "fetch", lambda packages, work: fake_debian(work))
    folder = tmp_path / "vm-nvidia"
    built = image.build(folder)
    assert built.driver is None and image.find(folder).initrd.is_file()
    before = {p.name: p.read_bytes() for p in folder.iterdir()}

    def fails(work: Path, cache: Path = nvidia.CACHE) -> nvidia.Driver:
        raise ConfigError("apt-get download firmware-nvidia-gsp failed (exit 100): E: Unable to locate package")

    monkeypatch.setattr(nvidia, "open_driver", fails)
    assert image.main(["--driver", nvidia.OPEN, str(folder)]) == 2
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before
    assert image.find(folder).driver is None  # still the working image it was
    assert sorted(p.name for p in tmp_path.iterdir()) == ["vm-nvidia"]  # no half-built folder left beside it


def test_a_driver_older_than_the_guests_cuda_is_refused_in_one_line_before_anything_is_built(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]):
    """Debian's newest driver (550, CUDA 12.4) against this project's torch (cu130): every GPU guest in the VM
    would have ended a CPU fallback, said nowhere before the run."""
    old = "NVIDIA-Linux-x86_64-550.163.01.run"
    run = makeself_run(tmp_path, driver_members("550.163.01", "12.4"), tmp_path / "ran", old, "550.163.01")
    monkeypatch.setattr(image, "versioned_kernel_package", lambda: pytest.fail("the kernel fetched before the check"))
    monkeypatch.setattr(nvidia, "cached_modules", lambda built, build: pytest.fail("modules built before the check"))
    monkeypatch.setattr(image.cudaver, "guest_needs", lambda: {"torch": "13.0", "tensorflow": "12.5"})
    assert image.main(["--driver", str(run), str(tmp_path / "vm-nvidia")]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err == ["error: setup-vm: driver 550.163.01 supports CUDA 12.4; this torch needs CUDA 13.0 (driver >= 580): "
                   "pass VM_DRIVER=<NVIDIA-Linux-x86_64-580 or newer .run>"]
    assert sorted(p.name for p in tmp_path.iterdir()) == [old]  # no image, no half-built folder, nothing run


def test_a_plain_setup_vm_fetches_the_kernel_and_busybox_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """``make setup-vm`` without VM_DRIVER stays what it was: no driver, firmware or CUDA check on its way."""
    monkeypatch.setattr(nvidia, "driver_of", lambda *a, **k: pytest.fail("a driver fetched without VM_DRIVER"))
    monkeypatch.setattr(image.cudaver, "guest_needs", lambda: pytest.fail("the CUDA check ran without a driver"))
    img, fetched = build_with(tmp_path, monkeypatch)
    assert fetched == [["linux-image-6.1.0-56-cloud-amd64", image.BUSYBOX_PACKAGE]] and img.driver is None
    assert not any(p.startswith(("nvidia", "lib/firmware")) for p in cpio_list(img.initrd))


def test_the_vm_tests_import_on_a_checkout_without_an_image(tmp_path, monkeypatch):
    """A fresh clone's make test-fast: no .vm/ yet, so tests.support.vms has no IMAGE to find; the VM tests must
    still import (and skip, saying why), not fail collection."""
    import importlib
    import sys

    from suites.backends.vm import image

    monkeypatch.setattr(image, "DEFAULT_DIR", tmp_path / "no-vm")
    monkeypatch.delitem(sys.modules, "tests.support.vms", raising=False)
    monkeypatch.delitem(sys.modules, "tests.unit.suites.backends.vm.test_qemu", raising=False)
    vms = importlib.import_module("tests.support.vms")
    assert vms.IMAGE is None and vms.MISSING
    qemu_tests = importlib.import_module("tests.unit.suites.backends.vm.test_qemu")
    assert qemu_tests.needs_vm.kwargs["reason"].startswith("no VM set-up here (")
