"""Tests of ``suites/backends/vm/nvidia.py``."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from suites.backends.vm import image, nvidia
from suites.errors import ConfigError
from tests.support.driver_runs import GOOD, HEADER, build_with, cpio_list, driver_members, makeself_run, run_file

NVIDIA_RUN = "NVIDIA-Linux-x86_64-580.95.05.run"


@pytest.mark.parametrize("name, version, flavour", [(GOOD, "535.261.03", nvidia.GRID),
                                                 (NVIDIA_RUN, "580.95.05", nvidia.NVIDIA)])
def test_a_driver_run_is_unpacked_as_data_and_its_script_never_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                    name: str, version: str, flavour: str):
    """A driver .run is read as data, its script never run (``sh x.run --extract-only`` runs whatever its stub
    says), for the GRID guest driver and NVIDIA's own package alike: the libraries the loader asks for by soname get
    their links (the installer that makes them is never run), the EGL vendor file and the GSP firmware come along."""
    marker = tmp_path / "ran"
    run = makeself_run(tmp_path, driver_members(version), marker, name, version)
    assert nvidia.check_run_file(run) == (version, flavour)
    monkeypatch.setattr(nvidia, "cached_modules", lambda built, build: [])  # modules: built and cached elsewhere
    driver = nvidia.run_driver(run, tmp_path / "work")
    layer = driver.with_modules("6.1.0-56-cloud-amd64", tmp_path / "work", tmp_path / "cache")
    files = {n: data for n, _, data in layer.files}
    assert set(files) == {f"nvidia/lib/libcuda.so.{version}", "nvidia/lib/libcuda.so.1", "nvidia/bin/nvidia-smi",
                          f"nvidia/lib/libEGL_nvidia.so.{version}", "nvidia/lib/libEGL_nvidia.so.0",
                          f"nvidia/lib/libnvidia-eglcore.so.{version}", nvidia.EGL_VENDOR,
                          f"lib/firmware/nvidia/{version}/gsp_ga10x.bin",
                          f"lib/firmware/nvidia/{version}/gsp_tu10x.bin"}
    assert files["nvidia/lib/libcuda.so.1"] == f"libcuda.so.{version}".encode()  # a link: the target is the data
    assert layer.flavour == flavour and layer.file == name
    assert layer.source.endswith("(built for 6.1.0-56-cloud-amd64)")
    assert (tmp_path / "work" / "run" / "kernel-open" / "Makefile").read_bytes() == b"all:\n"
    assert not marker.exists()
    subprocess.run(["sh", str(run)], check=True)  # the same file run: its stub is what would have run
    assert marker.exists()


@pytest.mark.parametrize("stub, says", [
    (HEADER + b"touch pwned\n", "its stub names no payload offset"),
    (HEADER + b'offset=`head -n 40 "$0"`\n', "the payload starts after line 40"),
    (HEADER + b'offset=`head -n 4 "$0"`\nnot a tar at all, but long enough to look' + b"." * 300,
     "no compressed tar after line 4"),
])
def test_a_run_whose_payload_cannot_be_read_as_data_is_refused(tmp_path: Path, stub: bytes, says: str):
    with pytest.raises(ConfigError, match=says):
        nvidia.check_run_file(run_file(tmp_path, GOOD, stub))


def test_a_grid_guest_driver_that_looks_like_nvidias_gives_its_version(tmp_path: Path):
    assert nvidia.check_run_file(makeself_run(tmp_path, {"x": b""}, tmp_path / "ran")) == ("535.261.03", nvidia.GRID)


@pytest.mark.parametrize("name, data, says", [
    (None, b"", "no such file"),
    ("driver.run", HEADER, "not an NVIDIA guest driver's name"),
    ("NVIDIA-Linux-x86_64-535.261.03-grid.run.sh", HEADER, "not an NVIDIA guest driver's name"),
    ("NVIDIA-Linux-x86_64-535.261.03-vgpu-kvm.run", HEADER, "the host's vGPU manager, not the guest's driver"),
    (GOOD, b"\x7fELF\x02\x01\x01" + b"\0" * 100, "not a makeself archive"),
    (GOOD, b"#!/bin/sh\n# Makeself 2.4\nlabel=\"something else 1.0\"\n", "not NVIDIA's driver 535.261.03"),
])
def test_a_fake_run_file_is_refused_with_its_reason(tmp_path: Path, name: str | None, data: bytes, says: str):
    path = tmp_path / GOOD if name is None else run_file(tmp_path, name, data)
    with pytest.raises(ConfigError, match=f"vm.guest_driver={path}: .*{says}"):
        nvidia.check_run_file(path)


def test_the_modules_are_fitted_to_a_kernel_with_the_newer_bar_resize_call(tmp_path: Path):
    tree, common = tmp_path / "src", tmp_path / "common"
    (tree / "nvidia").mkdir(parents=True)
    (common / "include" / "linux").mkdir(parents=True)
    source = tree / "nvidia" / "nv-pci.c"
    source.write_text(f"    r = {nvidia.RESIZE_CALL};\n")
    pci_h = common / "include" / "linux" / "pci.h"
    pci_h.write_text("int pci_resize_resource(struct pci_dev *dev, int i, int size);")
    assert nvidia.fit_to_kernel(tree, common) == [] and nvidia.RESIZE_CALL in source.read_text()
    (common / "include" / "linux" / "pci.h").write_text("int pci_resize_resource(struct pci_dev *dev, int i, int "
                                                        "size,\n\t\t\t\t     int exclude_bars);")
    assert nvidia.fit_to_kernel(tree, common) == ["pci_resize_resource given exclude_bars=0 (the kernel's newer "
                                                  "signature)"]
    assert "pci_resize_resource(pci_dev, NV_GPU_BAR1, requested_size, 0)" in source.read_text()


def test_the_user_space_keeps_its_library_links_and_takes_nvidia_smi_to_bin(tmp_path: Path):
    lib = tmp_path / "libcuda.so.535.261.03"
    lib.write_bytes(b"\x7fELF cuda")
    (tmp_path / "libcuda.so.1").symlink_to(lib.name)
    (tmp_path / "nvidia-smi").write_bytes(b"\x7fELF smi")
    (tmp_path / "wrapper").mkdir()
    (tmp_path / "wrapper" / "nvidia-smi").write_bytes(b"#!/bin/sh\nexec /usr/lib/nvidia/current/nvidia-smi")
    files = {name: (mode, data) for name, mode, data in
             nvidia.payload([*sorted(tmp_path.iterdir()), tmp_path / "wrapper" / "nvidia-smi"])}
    assert files == {"nvidia/lib/libcuda.so.1": (0o120777, b"libcuda.so.535.261.03"),
                     "nvidia/lib/libcuda.so.535.261.03": (0o100755, b"\x7fELF cuda"),
                     "nvidia/bin/nvidia-smi": (0o100755, b"\x7fELF smi")}


def test_the_images_apt_reads_its_own_sources_and_lists_not_the_hosts(tmp_path: Path):
    opts = nvidia.apt_options(tmp_path / "apt")
    assert f"-oDir::State::Lists={tmp_path / 'apt' / 'lists'}" in opts
    assert "-oDir::Etc::SourceParts=/nonexistent" in opts
    sources = (tmp_path / "apt" / "sources.list").read_text()
    assert "http://deb.debian.org/debian bookworm main contrib non-free non-free-firmware\n" in sources
    assert "http://deb.debian.org/debian-security bookworm-security main contrib non-free non-free-firmware" in sources
    (tmp_path / "apt" / "lists" / "old_Packages").write_text("")  # lists of other sources: fetched again
    nvidia.apt_options(tmp_path / "apt")
    assert (tmp_path / "apt" / "lists" / "old_Packages").exists()  # the same sources: kept
    (tmp_path / "apt" / "sources.list").write_text("deb http://deb.debian.org/debian bookworm main\n")
    nvidia.apt_options(tmp_path / "apt")
    assert not (tmp_path / "apt" / "lists" / "old_Packages").exists()


def test_an_image_holds_the_driver_its_manifest_names_by_flavour_and_file(tmp_path: Path):
    """Which driver an image holds is its manifest's flavour (and a GRID .run's file name), not its display text;
    an image built before issue 75 says its flavour as ``kind``."""
    def img(driver: dict[str, object] | None) -> image.Image:
        return image.Image(tmp_path, tmp_path / "vmlinuz", tmp_path / "initrd.gz", "6.1.0-56-cloud-amd64", {}, driver)

    grid = nvidia.Layer("535.261.03", nvidia.GRID, "GRID guest driver (says open kernel modules)", [], GOOD).manifest()
    opened = nvidia.Layer("535.261.03", nvidia.OPEN, f"open kernel modules ({GOOD})").manifest()
    assert img(grid).holds(f"/somewhere/{GOOD}") and not img(grid).holds(nvidia.OPEN)
    assert not img(grid).holds("/x/NVIDIA-Linux-x86_64-550.90.07-grid.run")
    assert img(opened).holds(nvidia.OPEN) and not img(opened).holds(GOOD)
    assert img(grid).driver_flavour() == nvidia.GRID and img(None).driver_flavour() == ""
    assert not img(None).holds("open")
    before_75 = {("kind" if k == "flavour" else k): v for k, v in opened.items()}  # its old key: read for a release
    assert "flavour" not in before_75 and img(before_75).holds(nvidia.OPEN)
    older = {"version": "535.261.03", "source": "open kernel modules (Debian ...)"}  # before manifests said flavour
    assert not img(older).holds(nvidia.OPEN)  # so make setup-vm VM_DRIVER=open builds it again (cached modules)


def test_the_initramfs_holds_the_gsp_firmware_of_its_modules_version_and_the_egl_files(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """The open kernel modules load gsp_*.bin of their own version from /lib/firmware/nvidia/<version>/ (the
    initramfs: the kernel's loader reads its root) at the GPU's first open; EGL's library and vendor file are in
    /nvidia, which init.sh binds at /run/nvidia in the VM's view."""
    run = makeself_run(tmp_path, driver_members("580.95.05", "13.0"), tmp_path / "ran", NVIDIA_RUN, "580.95.05")
    img, _ = build_with(tmp_path, monkeypatch, str(run), {"torch": "13.0"})
    listed = cpio_list(img.initrd)
    for path in ("lib/firmware/nvidia/580.95.05/gsp_ga10x.bin", "lib/firmware/nvidia/580.95.05/gsp_tu10x.bin",
                 "nvidia/modules/nvidia.ko", "nvidia/lib/libcuda.so.1", "nvidia/lib/libEGL_nvidia.so.0",
                 "nvidia/lib/libEGL_nvidia.so.580.95.05", "nvidia/egl_vendor.d/10_nvidia.json"):
        assert path in listed, (path, listed)
    for folder in ("lib/firmware", "lib/firmware/nvidia", "lib/firmware/nvidia/580.95.05", "nvidia/egl_vendor.d"):
        inside = [i for i, p in enumerate(listed) if p.startswith(f"{folder}/")]  # the unpacker makes no folder
        assert inside and listed.index(folder) < min(inside), folder
    assert not any(p.startswith("nvidia/lib/32") or "installer" in p for p in listed)
    assert img.driver["flavour"] == nvidia.NVIDIA and img.driver["file"] == NVIDIA_RUN and img.holds(str(run))
    assert img.driver["cuda"] == "13.0" and img.driver["cuda_from"] == "read from libcuda.so.580.95.05"
    assert img.driver["firmware"] == ["lib/firmware/nvidia/580.95.05/gsp_ga10x.bin",
                                      "lib/firmware/nvidia/580.95.05/gsp_tu10x.bin"]
    assert img.driver["guest_cuda"] == {"torch": "13.0"} and not (tmp_path / "ran").exists()


def test_the_module_build_asks_for_the_images_modules_without_debug_information(tmp_path: Path):
    """make_modules on a tree whose Makefile includes a kernel configuration with debug information on and hands the
    build to a sub-make, as the kernel's kbuild does: the sub-make builds only the modules the image loads (not
    nvidia-drm or nvidia-peermem) and sees debug information off (keep() strips it anyway: ~18 % of the CPU)."""
    tree = tmp_path / "kernel-open"
    tree.mkdir()
    (tree / "config.mk").write_text("CONFIG_DEBUG_INFO=y\nCONFIG_DEBUG_INFO_BTF_MODULES=y\n")
    (tree / "Makefile").write_text("NV_KERNEL_MODULES ?= nvidia nvidia-uvm nvidia-modeset nvidia-drm nvidia-peermem\n"
                                   "modules:\n\t$(MAKE) -f Kbuild\n")
    (tree / "Kbuild").write_text("include config.mk\nall:\n\techo '$(NV_KERNEL_MODULES)|$(CONFIG_DEBUG_INFO)|"
                                 "$(CONFIG_DEBUG_INFO_BTF_MODULES)|$(SYSSRC)' > seen\n")
    nvidia.make_modules(tree, tmp_path / "headers", tmp_path / "common", "building the fake modules")
    assert (tree / "seen").read_text() == f"nvidia nvidia-uvm nvidia-modeset|||{tmp_path / 'common'}\n"
