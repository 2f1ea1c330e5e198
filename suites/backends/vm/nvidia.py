"""The NVIDIA driver of a VM image (``make setup-vm VM_DRIVER=open|<GRID .run>``): kernel modules built for the
image's own kernel, and the user-space CUDA and NVML load, of the same version.

``open``: NVIDIA's open kernel modules (Turing and newer, H100 included) as Debian packages them
(``nvidia-open-kernel-source``, contrib: the GPU core comes prebuilt, only the kernel interface is compiled, a
minute or two), built against the image kernel's headers from the same archive, with the matching user-space
(``libcuda1``, ``libnvidia-ml1``, ``nvidia-smi``, non-free) pinned to the modules' version: the host's libraries
may be another version, and a user-space that differs from its kernel module by one digit refuses to start.

A vGPU guest needs NVIDIA's GRID guest driver instead (licensed, not redistributable): the user's
``NVIDIA-Linux-x86_64-<version>-grid.run`` is checked here (a makeself archive of NVIDIA's, a guest driver) before
anything is built from it, and its payload is read as data (makeself.py): the file's own script is never run.

The built modules are cached by kernel release and driver version (``~/.cache/gpu-mixed-bench/vm-nvidia``): a
second image build, or CI's, takes the cached ones.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from suites.backends.vm import apt as debian
from suites.backends.vm import makeself
from suites.backends.vm.apt import run
from suites.errors import ConfigError

OPEN = "open"
GRID = "grid"  # the manifest's kind for a GRID guest driver (OPEN: Debian's open kernel modules)
SOURCE_PACKAGE = "nvidia-open-kernel-source"
USERSPACE = ("libcuda1", "libnvidia-ml1", "nvidia-smi", "libnvidia-ptxjitcompiler1")
MODULES = ("nvidia.ko", "nvidia-uvm.ko", "nvidia-modeset.ko")  # loaded in this order; drm/peermem not needed
ARCHIVE = "http://deb.debian.org/debian"
SUITES = (("debian", "bookworm"), ("debian", "bookworm-updates"), ("debian-security", "bookworm-security"))
KEYRING = "/usr/share/keyrings/debian-archive-keyring.gpg"
CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "gpu-mixed-bench" / "vm-nvidia"
FITTED = "fitted.txt"  # in a cache entry: what was changed in the source to build for that kernel
RUN_NAME = re.compile(r"^NVIDIA-Linux-x86_64-(\d+\.\d+(?:\.\d+)?)-grid\.run$")


@dataclass
class Layer:
    """What a driver adds to an image: files for the initramfs (path -> mode, bytes) and its manifest entry."""

    version: str
    kind: str  # OPEN or GRID
    source: str  # what a person reads: "open kernel modules (Debian nvidia-open-kernel-source 535.261.03-1 ...)"
    files: list[tuple[str, int, bytes]] = field(default_factory=list)
    file: str = ""  # GRID: the .run's file name

    def manifest(self) -> dict[str, object]:
        return {"version": self.version, "kind": self.kind, "file": self.file, "source": self.source,
                "modules": [n for n, _, _ in self.files if n.endswith(".ko")]}


def check_run_file(path: Path) -> str:
    """The GRID guest driver's version, from a ``.run`` file checked for what it must be; else one ConfigError
    with the reason (a renamed file, a host (vGPU manager) driver, anything else)."""
    if not path.is_file():
        raise ConfigError(f"vm.guest_driver={path}: no such file (NVIDIA's GRID guest driver, "
                          "NVIDIA-Linux-x86_64-<version>-grid.run, from NVIDIA's licensing portal)")
    m = RUN_NAME.match(path.name)
    if not m:
        raise ConfigError(f"vm.guest_driver={path}: not a GRID guest driver's name (NVIDIA-Linux-x86_64-<version>"
                          "-grid.run; a -vgpu-kvm.run is the host's vGPU manager, not the guest's driver)")
    with path.open("rb") as f:
        head = f.read(16384)
    if not head.startswith(b"#!/bin/sh") or b"makeself" not in head.lower():
        raise ConfigError(f"vm.guest_driver={path}: not a makeself archive (NVIDIA's .run files are; this one "
                          "starts with " + repr(head[:16]) + ")")
    if b"NVIDIA" not in head or m.group(1).encode() not in head:
        raise ConfigError(f"vm.guest_driver={path}: a makeself archive, but not NVIDIA's driver {m.group(1)} "
                          "(its header names neither)")
    makeself.payload_span(path)  # a payload that can be read as data: the stub itself is never run
    return m.group(1)


def apt_options(state: Path) -> list[str]:
    """apt with its own sources (main, contrib, non-free) and lists in ``state``: the host's own lists (often
    main alone) are neither read nor changed, and no root is needed."""
    state.mkdir(parents=True, exist_ok=True)
    (state / "lists" / "partial").mkdir(parents=True, exist_ok=True)
    sources = state / "sources.list"
    sources.write_text("".join(f"deb [signed-by={KEYRING}] {ARCHIVE.rsplit('/', 1)[0]}/{repo} {suite} main "
                               "contrib non-free\n" for repo, suite in SUITES))
    return [f"-oDir::Etc::SourceList={sources}", "-oDir::Etc::SourceParts=/nonexistent",
            f"-oDir::State::Lists={state / 'lists'}"]


def apt(args: list[str], state: Path, cwd: Path | None = None) -> str:
    """apt with the image's sources; its lists fetched when missing (and again once when a call fails)."""
    return debian.apt(args, apt_options(state), cwd, lists_of(state))


def fetch(packages: list[str], work: Path, state: Path) -> Path:
    """``packages`` from the image's sources, unpacked: the tree they were unpacked into."""
    debian.fetch(packages, work, apt_options(state), lists_of(state))
    return work / "root"


def lists_of(state: Path) -> Callable[[], None]:
    """What fetches ``state``'s lists (called at once when there are none)."""
    def update() -> None:
        run(["apt-get", *apt_options(state), "update", "-qq"], "apt-get update (contrib, non-free)")

    if not any((state / "lists").glob("*Packages*")):
        update()
    return update


def candidate(package: str, state: Path) -> str:
    out = apt(["apt-cache", "policy", package], state)
    m = re.search(r"Candidate:\s*(\S+)", out)
    if not m or m.group(1) == "(none)":
        raise ConfigError(f"the Debian archive offers no {package} (contrib/non-free) for this release")
    return m.group(1)


def open_layer(release: str, work: Path, cache: Path = CACHE) -> Layer:
    """The open kernel modules built for kernel ``release`` (cached) and their user-space, unpacked."""
    state = cache / "apt"
    deb_version = candidate(SOURCE_PACKAGE, state)
    version = deb_version.split("-")[0]
    built = cache / f"{release}-{deb_version}"
    files = cached_modules(built, lambda out: build_open_modules(release, deb_version, work / "kbuild", out, state))
    files += userspace(deb_version, work / "userspace", state)
    fitted = (built / FITTED).read_text().strip() if (built / FITTED).is_file() else ""
    return Layer(version, OPEN, f"open kernel modules (Debian {SOURCE_PACKAGE} {deb_version}, built for {release}"
                 + (f"; {fitted}" if fitted else "") + ")", files)


def kernel_headers(release: str, work: Path, state: Path, extra: tuple[str, ...] = ()) -> tuple[Path, Path]:
    """The image kernel's headers (and ``extra`` packages) unpacked under ``work``: (its tree, the common tree)."""
    flavour = release.split("-", 2)[2]  # 6.1.0-56-cloud-amd64 -> cloud-amd64
    abi = release.removesuffix(f"-{flavour}")  # 6.1.0-56
    kbuild = ".".join(abi.split(".")[:2])  # 6.1
    root = fetch([f"linux-headers-{release}", f"linux-headers-{abi}-common", f"linux-kbuild-{kbuild}", *extra],
                 work, state)
    src = root / "usr" / "src"
    headers, common = src / f"linux-headers-{release}", src / f"linux-headers-{abi}-common"
    makefile = headers / "Makefile"  # it includes the common tree by its installed path: point it at ours
    makefile.write_text(makefile.read_text().replace("include /usr/src/", f"include {src}/"))
    return headers, common


def build_open_modules(release: str, deb_version: str, work: Path, out: Path, state: Path) -> None:
    """Download the module source and the kernel's headers, compile against them, keep the ``.ko`` files."""
    headers, common = kernel_headers(release, work, state, (f"{SOURCE_PACKAGE}={deb_version}",))
    run(["tar", "xJf", str(headers.parent / "nvidia-open-kernel.tar.xz"), "-C", str(work)],
        "unpack the module source")
    tree = work / "modules" / "nvidia-open-kernel"
    fitted = fit_to_kernel(tree, common)
    make_modules(tree, headers, common, f"building the NVIDIA open kernel modules for {release}")
    out.mkdir(parents=True, exist_ok=True)
    (out / FITTED).write_text("; ".join(fitted) + "\n")
    keep(tree, out)


def cached_modules(built: Path, build: Callable[[Path], None]) -> list[tuple[str, int, bytes]]:
    """The modules in the cache folder ``built`` as initramfs entries; ``build(built)`` first unless all are there
    (the folder of a build that stopped half-way is built again)."""
    if not all((built / m).is_file() for m in MODULES):
        build(built)
    return [(f"nvidia/modules/{m}", 0o100644, (built / m).read_bytes()) for m in MODULES]


def make_modules(tree: Path, headers: Path, common: Path, what: str) -> None:
    run(["make", f"-j{os.cpu_count() or 1}", f"SYSSRC={common}", f"SYSOUT={headers}", "modules"], what, tree)


def keep(tree: Path, out: Path) -> None:
    """The built modules into the cache, without their debug sections (nvidia.ko: 185 MB -> 11 MB; the initramfs
    is unpacked into the VM's memory). Last: a cache entry with every module is a finished one."""
    for m in MODULES:
        run(["strip", "--strip-debug", "-o", str(out / m), str(tree / m)], f"strip {m}")


RESIZE_CALL = "pci_resize_resource(pci_dev, NV_GPU_BAR1, requested_size)"


def fit_to_kernel(tree: Path, common: Path) -> list[str]:
    """Debian's 6.1 kernels took a later kernel's ``pci_resize_resource(..., int exclude_bars)`` (6.1.192 has it);
    the 535.261.03 modules call the three-argument form, which then does not compile: the call gets the fourth
    (0: no BAR excluded, the old behaviour). What was changed, to be said."""
    pci_h = (common / "include" / "linux" / "pci.h").read_text(errors="replace")
    source = tree / "nvidia" / "nv-pci.c"
    text = source.read_text(errors="replace")
    if "exclude_bars" not in pci_h or RESIZE_CALL not in text:
        return []
    source.write_text(text.replace(RESIZE_CALL, RESIZE_CALL[:-1] + ", 0)"))
    return ["pci_resize_resource given exclude_bars=0 (the kernel's newer signature)"]


def userspace(deb_version: str, work: Path, state: Path) -> list[tuple[str, int, bytes]]:
    """CUDA's and NVML's libraries and nvidia-smi of the modules' version, for ``/nvidia/lib`` and
    ``/nvidia/bin`` in the initramfs (init.sh puts them in the VM's view at /run/nvidia)."""
    root = fetch([f"{p}={deb_version}" for p in USERSPACE], work, state)
    return payload([p for p in root.rglob("*") if ".so" in p.name or p.name == "nvidia-smi"])


def payload(found: list[Path]) -> list[tuple[str, int, bytes]]:
    """``found`` libraries and nvidia-smi as initramfs entries under nvidia/lib and nvidia/bin; a library's
    links (libcuda.so.1 -> libcuda.so.535.261.03) stay links (newc holds them: the target is the data)."""
    files: list[tuple[str, int, bytes]] = []
    for p in sorted(found, key=lambda p: p.name):
        where = "bin" if p.name == "nvidia-smi" else "lib"
        if p.is_symlink():
            files.append((f"nvidia/{where}/{p.name}", 0o120777, os.readlink(p).rsplit("/", 1)[-1].encode()))
        elif p.is_file():
            data = p.read_bytes()
            if where == "bin" and not data.startswith(b"\x7fELF"):
                continue  # Debian's /usr/bin/nvidia-smi is a wrapper script calling the binary by its own path
            files.append((f"nvidia/{where}/{p.name}", 0o100755, data))
    return files


def grid_layer(run_file: Path, release: str, work: Path, cache: Path = CACHE) -> Layer:
    """The GRID guest driver from the user's ``.run``: unpacked as data (never run, no install on this host), its
    open kernel modules built for ``release`` as :func:`open_layer` builds Debian's, its own user-space taken
    along."""
    version = check_run_file(run_file)
    tree = makeself.unpack(run_file, work / "grid")

    def build(out: Path) -> None:
        headers, common = kernel_headers(release, work / "kbuild", cache / "apt")
        make_modules(tree / "kernel-open", headers, common, f"building {run_file.name}'s kernel modules for {release}")
        out.mkdir(parents=True, exist_ok=True)
        keep(tree / "kernel-open", out)

    files = cached_modules(cache / f"{release}-grid-{version}", build)
    wanted = ("libcuda.so", "libnvidia-ml.so", "libnvidia-ptxjitcompiler.so")
    files += payload([p for p in tree.iterdir() if p.name.startswith(wanted) or p.name == "nvidia-smi"])
    return Layer(version, GRID, f"GRID guest driver {run_file.name}", files, run_file.name)
