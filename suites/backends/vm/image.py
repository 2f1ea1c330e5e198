"""The VM image ``make setup-vm`` builds: a Debian kernel and an initramfs, from Debian packages only.

Why this root and not a disk image: a guest VM sees a read-only view of the host over virtiofs, at the host's own
paths (suites/backends/vm/share.py; the initramfs's ``init.sh`` mounts it and chroots), so the same venv,
repository and data paths work inside with nothing copied, and the image is two files (~30 MiB) rebuilt in seconds.
Why virtiofs and not 9p: the smallest Debian kernel
(``linux-image-cloud-amd64``, ~2 s to boot under TCG) has virtiofs and no 9p, and virtiofs is the faster of the two
for the many small reads of Python imports. The initramfs holds only busybox (``busybox-static``), the kernel's
virtio modules with their dependencies (read from each module's own ``depends=``), and ``init.sh``.

``python -m suites.backends.vm.image [--driver open|<NVIDIA .run>|<GRID .run>] [DIR]`` builds it (``make setup-vm``,
``VM_DRIVER=...``: with an NVIDIA driver, suites/backends/vm/nvidia.py, in ``.vm-nvidia``); :func:`find` is what the
backend uses.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from suites.backends.vm import apt, cudaver, nvidia
from suites.errors import ConfigError

REPO_ROOT = Path(__file__).resolve().parents[3]
DEFAULT_DIR = REPO_ROOT / ".vm"
NVIDIA_DIR = REPO_ROOT / ".vm-nvidia"  # an image with an NVIDIA driver: the default one stays small and quick
KERNEL_PACKAGE = "linux-image-cloud-amd64"  # a metapackage: its dependency is the versioned image
BUSYBOX_PACKAGE = "busybox-static"
MODULES = ("virtio_pci", "virtio_console", "virtiofs")  # PCI transport, the protocol port, the host's root
INIT = Path(__file__).with_name("init.sh")
MANIFEST = "image.json"


@dataclass(frozen=True)
class Image:
    dir: Path
    kernel: Path
    initrd: Path
    release: str  # the kernel's release, e.g. 6.1.0-56-cloud-amd64
    packages: dict[str, str]  # Debian package -> version it was built from
    driver: dict[str, object] | None = None  # the NVIDIA driver it holds (nvidia.Layer's manifest), if any

    def describe(self) -> str:
        return f"Debian kernel {self.release} ({', '.join(f'{k} {v}' for k, v in self.packages.items())})" + \
            (f"; {self.driver_text()}" if self.driver else "; no NVIDIA driver")

    def driver_flavour(self) -> str:
        """nvidia.OPEN, NVIDIA, GRID, or "" (no driver, or an image built before the manifest said its flavour; one
        built before issue 75 says it as ``kind``)."""
        driver = self.driver or {}
        return str(driver.get("flavour", driver.get("kind", "")))

    def holds(self, driver: str) -> bool:
        """Whether it holds the driver ``driver`` names: nvidia.OPEN, or an NVIDIA or GRID .run (by its file name)."""
        if driver == nvidia.OPEN:
            return self.driver_flavour() == nvidia.OPEN
        return self.driver_flavour() in (nvidia.NVIDIA, nvidia.GRID) and \
            (self.driver or {}).get("file") == Path(driver).name

    def driver_text(self) -> str:
        return f"NVIDIA driver {self.driver['version']}: {self.driver['source']}" if self.driver else \
            "no NVIDIA driver in the VM image"


def find(image_dir: Path) -> Image:
    """The image ``make setup-vm`` built in ``image_dir``, or one ConfigError saying how to build it."""
    manifest = image_dir / MANIFEST
    try:
        text = manifest.read_text()
    except OSError as exc:
        raise ConfigError(f"backend=vm: no VM image in {image_dir} ({exc.strerror}: {MANIFEST}); build it with "
                          "`make setup-vm` (Debian packages: a kernel and busybox)") from exc
    try:
        meta = json.loads(text)
        image = Image(image_dir, image_dir / meta["kernel"], image_dir / meta["initrd"], str(meta["release"]),
                      dict(meta["packages"]), dict(meta["nvidia"]) if meta.get("nvidia") else None)
    except (ValueError, KeyError, TypeError) as exc:
        raise ConfigError(f"backend=vm: {manifest} is not the manifest `make setup-vm` writes ({type(exc).__name__}:"
                          f" {str(exc)[:80]}); rebuild the image with `make setup-vm`") from exc
    if meta.get("init_sha256") != init_sha256():
        raise ConfigError(f"backend=vm: the VM image in {image_dir} was built from another init.sh than this "
                          "checkout's; rebuild it with `make setup-vm`")
    for part, magic in ((image.kernel, kernel_magic), (image.initrd, gzip_magic)):
        why = "is missing" if not part.is_file() else magic(part)
        if why:
            raise ConfigError(f"backend=vm: {part} {why}; rebuild the VM image with `make setup-vm`")
    return image


def kernel_magic(path: Path) -> str:
    """'' for an x86 Linux boot image (the "HdrS" signature of its boot protocol at 0x202), else what it is not:
    QEMU given anything else says only "linux kernel too old to load a ram disk"."""
    with path.open("rb") as f:
        f.seek(0x202)
        return "" if f.read(4) == b"HdrS" else "is not a Linux kernel image (no bzImage header at 0x202)"


def gzip_magic(path: Path) -> str:
    with path.open("rb") as f:
        return "" if f.read(2) == b"\x1f\x8b" else "is not a gzip initramfs"


def build(image_dir: Path, driver: str = "", needs: dict[str, str] | None = None) -> Image:
    """Download the kernel and busybox packages (apt-get download: no root needed), unpack them, add the NVIDIA
    driver ``driver`` names ("open", a .run's path, "" none), pack the initramfs into a new folder beside
    ``image_dir`` and put it in ``image_dir``'s place once whole: a build that fails or is stopped leaves the image
    that was there working. A driver that cannot serve the CUDA the guest's frameworks need (``needs``; None: this
    Python's torch and TensorFlow) is refused before its modules or the image are built."""
    if driver and driver != nvidia.OPEN:
        nvidia.check_run_file(Path(driver))  # before anything is downloaded
    image_dir.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f".{image_dir.name}-build-", dir=image_dir.parent) as tmp:
        work = Path(tmp)
        drv = nvidia.driver_of(driver, work / "driver") if driver else None
        if drv is not None:
            guest = cudaver.guest_needs() if needs is None else needs
            cudaver.check(drv.layer.version, drv.layer.cuda, guest, "VM_DRIVER")
            drv.layer.guest_cuda = guest
        kernel_pkg = versioned_kernel_package()
        debs = apt.fetch([kernel_pkg, BUSYBOX_PACKAGE], work)
        root = work / "root"
        packages = {name: version for name, version in (deb_version(d) for d in debs)}
        layer = drv.with_modules(kernel_release(root), work / "driver") if drv is not None else None
        staged = work / "image"
        staged.mkdir()
        assemble(root, staged, packages, layer)
        swap(staged, image_dir)
    return find(image_dir)


def swap(new: Path, image_dir: Path) -> None:
    """``new`` (a whole image) in ``image_dir``'s place: two renames on one file system, the old image removed
    only after."""
    old = image_dir.with_name(f".{image_dir.name}-old-{os.getpid()}")
    if image_dir.exists():
        image_dir.rename(old)
    new.rename(image_dir)
    shutil.rmtree(old, ignore_errors=True)


def kernel_release(root: Path) -> str:
    kernels = sorted((root / "boot").glob("vmlinuz-*"))
    if not kernels:
        raise ConfigError(f"no kernel under {root / 'boot'}")
    return kernels[-1].name.removeprefix("vmlinuz-")


def assemble(root: Path, image_dir: Path, packages: dict[str, str], layer: nvidia.Layer | None = None) -> Image:
    """From an unpacked kernel + busybox tree (and a driver ``layer``): ``vmlinuz`` and ``initrd.gz`` in
    ``image_dir``, and the manifest."""
    release = kernel_release(root)
    moddir = root / "lib" / "modules" / release
    modules = module_order(moddir, MODULES)
    entries: list[tuple[str, int, bytes]] = [("bin", 0o040755, b""), ("lib", 0o040755, b""),
                                             ("lib/modules", 0o040755, b"")]
    entries += [(d, 0o040755, b"") for d in ("proc", "sys", "dev", "host")]
    entries.append(("bin/busybox", 0o100755, (root / "bin" / "busybox").read_bytes()))
    entries += [(f"lib/modules/{m.name}", 0o100644, m.read_bytes()) for m in modules]
    entries.append(("lib/modules/order", 0o100644, "".join(f"{m.name}\n" for m in modules).encode()))
    entries.append(("init", 0o100755, INIT.read_bytes()))
    if layer is not None:  # /nvidia (modules, lib, bin, EGL vendor file, version: init.sh), its GSP firmware
        files = [*layer.files, ("nvidia/version", 0o100644, layer.version.encode() + b"\n")]
        entries += [(d, 0o040755, b"") for d in folders_of([n for n, _, _ in files], {n for n, _, _ in entries})]
        entries += files
    shutil.copyfile(root / "boot" / f"vmlinuz-{release}", image_dir / "vmlinuz")
    (image_dir / "initrd.gz").write_bytes(gzip.compress(newc(entries), 6))
    meta = {"kernel": "vmlinuz", "initrd": "initrd.gz", "release": release, "packages": packages,
            "modules": [m.name for m in modules], "init_sha256": init_sha256(),
            "nvidia": layer.manifest() if layer is not None else None,
            "built_at": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
    (image_dir / MANIFEST).write_text(json.dumps(meta, indent=2) + "\n")
    return find(image_dir)


def folders_of(paths: list[str], made: set[str]) -> list[str]:
    """The folders ``paths`` lie in, parents first, less those ``made`` already: the kernel's initramfs unpacker
    makes no folder a file's path implies."""
    wanted = {str(parent) for p in paths for parent in Path(p).parents if str(parent) != "."}
    return sorted(wanted - made, key=lambda d: (d.count("/"), d))


def init_sha256() -> str:
    return hashlib.sha256(INIT.read_bytes()).hexdigest()


def module_order(moddir: Path, names: tuple[str, ...]) -> list[Path]:
    """The ``.ko`` files for ``names`` and everything they depend on, dependencies first; a module built into
    this kernel (``modules.builtin``) needs no file."""
    builtin = {Path(line).stem for line in _lines(moddir / "modules.builtin")}
    files = {p.stem.replace("-", "_"): p for p in moddir.rglob("*.ko")}
    order: list[Path] = []

    def visit(name: str, chain: tuple[str, ...]) -> None:
        name = name.replace("-", "_")
        if name in builtin or any(p.stem.replace("-", "_") == name for p in order):
            return
        if name in chain:
            raise ConfigError(f"module dependency cycle: {' -> '.join((*chain, name))}")
        if name not in files:
            raise ConfigError(f"kernel {moddir.name} has no module {name} (and it is not built in)")
        for dep in depends(files[name]):
            visit(dep, (*chain, name))
        order.append(files[name])

    for n in names:
        visit(n, ())
    return order


def depends(ko: Path) -> list[str]:
    """A module's dependencies, from its ``.modinfo`` (what modinfo -F depends prints; no kmod needed)."""
    m = re.search(rb"(?:^|\0)depends=([^\0]*)\0", ko.read_bytes())
    return [d for d in (m.group(1).decode().split(",") if m else []) if d]


def newc(entries: list[tuple[str, int, bytes]]) -> bytes:
    """A cpio archive in the kernel's initramfs format (``newc``: no cpio binary needed)."""
    out = bytearray()
    for ino, (name, mode, data) in enumerate([*entries, ("TRAILER!!!", 0, b"")], start=1):
        raw = name.encode() + b"\0"
        fields = (ino, mode, 0, 0, 1, 0, len(data), 0, 0, 0, 0, len(raw), 0)
        out += b"070701" + "".join(f"{v:08x}" for v in fields).encode() + raw
        out += b"\0" * (-len(out) % 4) + data
        out += b"\0" * (-len(out) % 4)
    return bytes(out)


def versioned_kernel_package() -> str:
    """The image package the kernel metapackage depends on (so the manifest names a real version)."""
    out = apt.apt(["apt-cache", "depends", KERNEL_PACKAGE], [], answered=lambda out: "Depends" in out)
    for line in out.splitlines():
        m = re.match(r"\s*Depends:\s*(linux-image-\S+)", line)
        if m:
            return m.group(1)
    raise ConfigError(f"apt-cache knows no {KERNEL_PACKAGE} (is this Debian, with its lists fetched?)")


def deb_version(deb: Path) -> tuple[str, str]:
    out = apt.run(["dpkg-deb", "-f", str(deb), "Package", "Version"], f"dpkg-deb -f {deb.name}")
    fields = dict(line.split(": ", 1) for line in out.splitlines() if ": " in line)
    return fields["Package"], fields["Version"]


def _lines(path: Path) -> list[str]:
    try:
        return path.read_text().split()
    except OSError:
        return []


def said(image: Image) -> str:
    """What an image holds, a fact a line (make's lines stay within 120 columns)."""
    return image.describe().replace("; ", "\n  ")


def main(argv: list[str]) -> int:
    driver = ""
    if argv[:1] == ["--driver"] and len(argv) >= 2:
        driver, argv = argv[1], argv[2:]
    image_dir = Path(argv[0]) if argv else NVIDIA_DIR if driver else DEFAULT_DIR
    try:
        image = find(image_dir)
        if not driver or image.holds(driver):
            print(f"setup-vm: {image_dir} is there (delete it to rebuild):\n  {said(image)}")
            return 0
    except ConfigError:
        pass
    try:
        t0 = time.monotonic()
        image = build(image_dir, driver)
    except (ConfigError, subprocess.CalledProcessError, OSError) as exc:
        print(f"error: setup-vm: {exc}", file=sys.stderr)
        return 2
    size = sum(p.stat().st_size for p in (image.kernel, image.initrd)) / 2**20
    print(f"setup-vm: built {image_dir} ({size:.0f} MiB, {time.monotonic() - t0:.0f} s):\n  {said(image)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
