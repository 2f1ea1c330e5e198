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


def makeself_run(tmp_path: Path, members: dict[str, bytes], marker: Path, name: str = GOOD,
                 version: str = "535.261.03") -> Path:
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
    stub = HEADER.replace(b"535.261.03", version.encode()) + f'filesizes="{len(payload)}"\ntouch {marker}\n'.encode()
    lines = stub.count(b"\n") + 2
    stub += f'offset=`head -n {lines} "$0" | wc -c | tr -d " "`\nexit 0\n'.encode()
    path = tmp_path / name
    path.write_bytes(stub + payload)
    return path


def driver_members(version: str, cuda: str = "") -> dict[str, bytes]:
    """A driver package's payload as NVIDIA lays it out (a libcuda whose PTX compiler banner says ``cuda``)."""
    banner = f"\0Cuda compilation tools, release {cuda}, V{cuda}.1\0".encode() if cuda else b""
    return {"kernel-open/Makefile": b"all:\n", f"libcuda.so.{version}": b"\x7fELF cuda" + banner,
            "nvidia-smi": b"\x7fELF smi", f"libEGL_nvidia.so.{version}": b"\x7fELF egl",
            f"libnvidia-eglcore.so.{version}": b"\x7fELF eglcore", "10_nvidia.json": VENDOR_JSON,
            "firmware/gsp_ga10x.bin": b"GSP ga10x", "firmware/gsp_tu10x.bin": b"GSP tu10x",
            f"32/libcuda.so.{version}": b"\x7fELF 32-bit", "nvidia-installer": b"\x7fELF installer"}


VENDOR_JSON = b'{"file_format_version": "1.0.0", "ICD": {"library_path": "libEGL_nvidia.so.0"}}\n'


NVIDIA_RUN = "NVIDIA-Linux-x86_64-580.95.05.run"


@pytest.mark.parametrize("name, version, kind", [(GOOD, "535.261.03", nvidia.GRID),
                                                 (NVIDIA_RUN, "580.95.05", nvidia.NVIDIA)])
def test_a_driver_run_is_unpacked_as_data_and_its_script_never_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                    name: str, version: str, kind: str):
    """Serious case 1 of issue 53 (``sh x.run --extract-only`` ran whatever the file's stub said), for the GRID
    guest driver and NVIDIA's own package alike: the libraries the loader asks for by soname get their links (the
    installer that makes them is never run), the EGL vendor file and the GSP firmware come along."""
    marker = tmp_path / "ran"
    run = makeself_run(tmp_path, driver_members(version), marker, name, version)
    assert nvidia.check_run_file(run) == (version, kind)
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
    assert layer.kind == kind and layer.file == name and layer.source.endswith("(built for 6.1.0-56-cloud-amd64)")
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


def test_a_payload_member_pointing_outside_its_folder_is_refused(tmp_path: Path):
    run = makeself_run(tmp_path, {"kernel-open/evil": b"->../../../outside"}, tmp_path / "ran")
    with pytest.raises(ConfigError, match="its payload could not be unpacked"):
        makeself.unpack(run, tmp_path / "grid")
    assert not (tmp_path / "outside").exists()


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
    assert "http://deb.debian.org/debian bookworm main contrib non-free non-free-firmware\n" in sources
    assert "http://deb.debian.org/debian-security bookworm-security main contrib non-free non-free-firmware" in sources
    (tmp_path / "apt" / "lists" / "old_Packages").write_text("")  # lists of other sources: fetched again
    nvidia.apt_options(tmp_path / "apt")
    assert (tmp_path / "apt" / "lists" / "old_Packages").exists()  # the same sources: kept
    (tmp_path / "apt" / "sources.list").write_text("deb http://deb.debian.org/debian bookworm main\n")
    nvidia.apt_options(tmp_path / "apt")
    assert not (tmp_path / "apt" / "lists" / "old_Packages").exists()


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

    def fails(work: Path, cache: Path = nvidia.CACHE) -> nvidia.Driver:
        raise ConfigError("apt-get download firmware-nvidia-gsp failed (exit 100): E: Unable to locate package")

    monkeypatch.setattr(nvidia, "open_driver", fails)
    assert image.main(["--driver", nvidia.OPEN, str(folder)]) == 2
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before
    assert image.find(folder).driver is None  # still the working image it was
    assert sorted(p.name for p in tmp_path.iterdir()) == ["vm-nvidia"]  # no half-built folder left beside it


def build_with(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, driver: str = "",
               needs: dict[str, str] | None = None) -> tuple[image.Image, list[list[str]]]:
    """image.build on a faked Debian (kernel, busybox), the driver's modules faked as built: what it fetched."""
    fetched: list[list[str]] = []
    monkeypatch.setattr(image, "versioned_kernel_package", lambda: "linux-image-6.1.0-56-cloud-amd64")
    monkeypatch.setattr(image.apt, "fetch", lambda packages, work: fetched.append(packages) or fake_debian(work))
    monkeypatch.setattr(nvidia, "cached_modules", lambda built, build: [
        (f"nvidia/modules/{m}", 0o100644, b"\0module") for m in nvidia.MODULES])
    return image.build(tmp_path / "vm-nvidia", driver, needs), fetched


def cpio_list(initrd: Path) -> list[str]:
    """What the initramfs holds, as ``zcat initrd.gz | cpio -t`` lists it."""
    unpacked = subprocess.run(["zcat", str(initrd)], capture_output=True, check=True).stdout
    return subprocess.run(["cpio", "-t", "--quiet"], input=unpacked, capture_output=True, check=True).stdout \
        .decode().split()


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
    assert img.driver["kind"] == nvidia.NVIDIA and img.driver["file"] == NVIDIA_RUN and img.holds(str(run))
    assert img.driver["cuda"] == "13.0" and img.driver["cuda_from"] == "read from libcuda.so.580.95.05"
    assert img.driver["firmware"] == ["lib/firmware/nvidia/580.95.05/gsp_ga10x.bin",
                                      "lib/firmware/nvidia/580.95.05/gsp_tu10x.bin"]
    assert img.driver["guest_cuda"] == {"torch": "13.0"} and not (tmp_path / "ran").exists()


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
