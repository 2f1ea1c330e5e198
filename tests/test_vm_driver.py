"""The NVIDIA driver of a VM image (suites/backends/vm/nvidia.py): a GRID .run is checked before anything is built
from it, the open modules are fitted to the image kernel they are built for, the user-space keeps its links, and
the image's own apt sources leave the host's lists alone."""

from __future__ import annotations

import io
import subprocess
import tarfile
from pathlib import Path

import pytest

from suites.backends.vm import image, makeself, nvidia
from suites.errors import ConfigError

GOOD = "NVIDIA-Linux-x86_64-535.261.03-grid.run"
HEADER = (b"#!/bin/sh\n# This script was generated using Makeself 2.1.5\nlabel=\"NVIDIA Accelerated Graphics Driver "
          b"for Linux-x86_64 535.261.03\"\n")


def run_file(tmp_path: Path, name: str = GOOD, data: bytes = HEADER) -> Path:
    path = tmp_path / name
    path.write_bytes(data + b"\0" * 64)
    return path


def makeself_run(tmp_path: Path, members: dict[str, bytes], marker: Path, name: str = GOOD) -> Path:
    """A makeself archive as NVIDIA's are laid out: a stub of N lines naming N (``head -n N``) and the payload's
    size, then an xz tar. Run, its stub would write ``marker``."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:xz") as tar:
        for member, data in members.items():
            info = tarfile.TarInfo(member)
            if data.startswith(b"->"):
                info.type, info.linkname = tarfile.SYMTYPE, data[2:].decode()
            else:
                info.size = len(data)
            tar.addfile(info, io.BytesIO(data) if info.isfile() else None)
    payload = buf.getvalue()
    stub = HEADER + f'filesizes="{len(payload)}"\ntouch {marker}\n'.encode()
    lines = stub.count(b"\n") + 2
    stub += f'offset=`head -n {lines} "$0" | wc -c | tr -d " "`\nexit 0\n'.encode()
    path = tmp_path / name
    path.write_bytes(stub + payload)
    return path


def test_a_grid_run_is_unpacked_as_data_and_its_script_never_runs(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch):
    """Serious case 1 of issue 53: ``sh x.run --extract-only`` ran whatever the file's stub said."""
    marker = tmp_path / "ran"
    run = makeself_run(tmp_path, {"kernel-open/Makefile": b"all:\n", "libcuda.so.535.261.03": b"\x7fELF cuda",
                                  "nvidia-smi": b"\x7fELF smi"}, marker)
    assert nvidia.check_run_file(run) == "535.261.03"
    monkeypatch.setattr(nvidia, "cached_modules", lambda built, build: [])  # modules: built and cached elsewhere
    layer = nvidia.grid_layer(run, "6.1.0-56-cloud-amd64", tmp_path / "work", tmp_path / "cache")
    assert {n for n, _, _ in layer.files} == {"nvidia/lib/libcuda.so.535.261.03", "nvidia/bin/nvidia-smi"}
    assert (tmp_path / "work" / "grid" / "kernel-open" / "Makefile").read_bytes() == b"all:\n"
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


def test_a_payload_member_pointing_outside_its_folder_is_refused(tmp_path: Path):
    run = makeself_run(tmp_path, {"kernel-open/evil": b"->../../../outside"}, tmp_path / "ran")
    with pytest.raises(ConfigError, match="its payload could not be unpacked"):
        makeself.unpack(run, tmp_path / "grid")
    assert not (tmp_path / "outside").exists()


def test_a_grid_guest_driver_that_looks_like_nvidias_gives_its_version(tmp_path: Path):
    assert nvidia.check_run_file(makeself_run(tmp_path, {"x": b""}, tmp_path / "ran")) == "535.261.03"


@pytest.mark.parametrize("name, data, says", [
    (None, b"", "no such file"),
    ("driver.run", HEADER, "not a GRID guest driver's name"),
    ("NVIDIA-Linux-x86_64-535.261.03-vgpu-kvm.run", HEADER, "the host's vGPU manager, not the guest's driver"),
    (GOOD, b"\x7fELF\x02\x01\x01" + b"\0" * 100, "not a makeself archive"),
    (GOOD, b"#!/bin/sh\n# Makeself 2.4\nlabel=\"something else 1.0\"\n", "not NVIDIA's driver 535.261.03"),
])
def test_a_fake_run_file_is_refused_with_its_reason(tmp_path: Path, name: str | None, data: bytes, says: str):
    path = tmp_path / GOOD if name is None else run_file(tmp_path, name, data)
    with pytest.raises(ConfigError, match=f"vm.guest_driver={path}: .*{says}"):
        nvidia.check_run_file(path)


def test_an_image_build_refuses_a_fake_run_before_downloading_anything(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(image, "versioned_kernel_package", lambda: pytest.fail("downloaded before the check"))
    fake = run_file(tmp_path, GOOD, b"not a driver")
    with pytest.raises(ConfigError, match="not a makeself archive"):
        image.build(tmp_path / "img", str(fake))
    assert not (tmp_path / "img").exists()
    assert image.main(["--driver", str(fake), str(tmp_path / "img")]) == 2


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
    assert "http://deb.debian.org/debian bookworm main contrib non-free" in sources
    assert "http://deb.debian.org/debian-security bookworm-security main contrib non-free" in sources


def test_an_image_holds_the_driver_its_manifest_names_by_kind_and_file(tmp_path: Path):
    """Which driver an image holds is its manifest's kind (and a GRID .run's file name), not its display text."""
    def img(driver: dict[str, object] | None) -> image.Image:
        return image.Image(tmp_path, tmp_path / "vmlinuz", tmp_path / "initrd.gz", "6.1.0-56-cloud-amd64", {}, driver)

    grid = nvidia.Layer("535.261.03", nvidia.GRID, "GRID guest driver (says open kernel modules)", [], GOOD).manifest()
    opened = nvidia.Layer("535.261.03", nvidia.OPEN, f"open kernel modules ({GOOD})").manifest()
    assert img(grid).holds(f"/somewhere/{GOOD}") and not img(grid).holds(nvidia.OPEN)
    assert not img(grid).holds("/x/NVIDIA-Linux-x86_64-550.90.07-grid.run")
    assert img(opened).holds(nvidia.OPEN) and not img(opened).holds(GOOD)
    assert img(grid).driver_kind() == nvidia.GRID and img(None).driver_kind() == "" and not img(None).holds("open")
    older = {"version": "535.261.03", "source": "open kernel modules (Debian ...)"}  # before manifests said kind
    assert not img(older).holds(nvidia.OPEN)  # so make setup-vm VM_DRIVER=open builds it again (cached modules)


@pytest.mark.e2e
def test_a_run_asking_for_a_fake_grid_driver_or_an_image_without_its_driver_is_one_error_line(tmp_path: Path):
    from .helpers import SMOKE, one_error_line, run_bench

    fake = run_file(tmp_path, GOOD, b"#!/bin/sh\necho not a driver\n")
    run = run_bench(tmp_path / "a", *SMOKE, "backend=vm", "vm.accel=tcg", f"vm.guest_driver={fake}")
    assert one_error_line(run.proc) == f"error: vm.guest_driver={fake}: not a makeself archive (NVIDIA's .run " \
        "files are; this one starts with b'#!/bin/sh\\necho n')"
    assert not run.run_dir.exists()
    run = run_bench(tmp_path / "b", *SMOKE, "backend=vm", "vm.accel=tcg", "vm.guest_driver=open",
                    f"vm.image_dir={tmp_path / 'none'}")
    assert one_error_line(run.proc).startswith(f"error: backend=vm: no VM image in {tmp_path / 'none'}")


def fake_debian(work: Path, release: str = "6.1.0-56-cloud-amd64") -> list[Path]:
    """What ``apt.fetch`` leaves for the image: a kernel (its boot header), busybox and the three modules."""
    root = work / "root"
    (root / "boot").mkdir(parents=True)
    (root / "boot" / f"vmlinuz-{release}").write_bytes(b"\0" * 0x202 + b"HdrS" + b"\0" * 64)
    (root / "bin").mkdir()
    (root / "bin" / "busybox").write_bytes(b"\x7fELF busybox")
    moddir = root / "lib" / "modules" / release
    moddir.mkdir(parents=True)
    for m in image.MODULES:
        (moddir / f"{m}.ko").write_bytes(b"\0depends=\0")
    return []


def test_a_failed_driver_build_leaves_the_working_image_in_place(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Serious case 9 of issue 53: the build deleted image.json before it built, so a failure left no image."""
    monkeypatch.setattr(image, "versioned_kernel_package", lambda: "linux-image-6.1.0-56-cloud-amd64")
    monkeypatch.setattr(image.apt, "fetch", lambda packages, work: fake_debian(work))
    folder = tmp_path / "vm-nvidia"
    built = image.build(folder)
    assert built.driver is None and image.find(folder).initrd.is_file()
    before = {p.name: p.read_bytes() for p in folder.iterdir()}

    def fails(release: str, work: Path) -> nvidia.Layer:
        raise ConfigError("building the NVIDIA open kernel modules failed (exit 2): nv-pci.c: error")

    monkeypatch.setattr(nvidia, "open_layer", fails)
    assert image.main(["--driver", nvidia.OPEN, str(folder)]) == 2
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before
    assert image.find(folder).driver is None  # still the working image it was
    assert sorted(p.name for p in tmp_path.iterdir()) == ["vm-nvidia"]  # no half-built folder left beside it
