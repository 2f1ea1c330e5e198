"""NVIDIA driver .run files made for the tests (a makeself payload of the members asked for), a fake Debian
archive, and the image builds that use them."""

from __future__ import annotations

import io
import subprocess
import tarfile
from pathlib import Path

import pytest

from suites.backends.vm import image, nvidia

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
