"""The NVIDIA driver of a VM image (``make setup-vm VM_DRIVER=open|<NVIDIA .run>|<GRID .run>``): kernel modules
built for the image's own kernel, the GSP firmware they load, and the user-space CUDA, NVML and EGL load, all of one
version.

``open``: NVIDIA's open kernel modules (Turing and newer, H100 included) as Debian packages them
(``nvidia-open-kernel-source``, contrib: the GPU core comes prebuilt, only the kernel interface is compiled, a
minute or two), built against the image kernel's headers from the same archive, with the matching user-space
(``libcuda1``, ``libnvidia-ml1``, ``nvidia-smi``, the EGL packages; non-free) and GSP firmware
(``firmware-nvidia-gsp``, non-free-firmware) pinned to the modules' version: the host's libraries may be another
version, a user-space that differs from its kernel module by one digit refuses to start, and the open modules run
the GPU through its GSP, whose firmware of their own version they load at the device's first open. Debian's
archive ends at the 535 (bookworm) and 550/555 (trixie, experimental) branches: CUDA 12.x (cudaver.py).

``<NVIDIA-Linux-x86_64-<version>.run>``: NVIDIA's own driver package, for passthrough with a newer CUDA (580+ for
CUDA 13); ``<NVIDIA-Linux-x86_64-<version>-grid.run>``: the GRID guest driver a vGPU needs (licensed, not
redistributable). Either is checked here before anything is built from it, and its payload is read as data
(makeself.py): the file's own script is never run. Its ``kernel-open`` tree is compiled like Debian's (its
Makefiles run: that is what building a module is); its libraries, ``nvidia-smi``, EGL vendor file and firmware are
taken as files.

The image is refused before anything is built when the driver cannot serve the CUDA the guest's torch (or
TensorFlow) was built for (cudaver.py). The built modules are cached by kernel release and driver version
(``~/.cache/gpu-mixed-bench/vm-nvidia``): a second image build, or CI's, takes the cached ones.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from suites.backends.vm import apt as debian
from suites.backends.vm import cudaver, makeself
from suites.backends.vm.apt import run
from suites.errors import ConfigError

OPEN = "open"
NVIDIA = "nvidia"  # the manifest's flavour for NVIDIA's own driver package (a .run, passthrough)
GRID = "grid"  # the manifest's flavour for a GRID guest driver (OPEN: Debian's open kernel modules)
SOURCE_PACKAGE = "nvidia-open-kernel-source"
USERSPACE = ("libcuda1", "libnvidia-ml1", "nvidia-smi", "libnvidia-ptxjitcompiler1")
EGL_PACKAGES = ("libegl-nvidia0", "libnvidia-eglcore", "libnvidia-glvkspirv", "nvidia-egl-common")
FIRMWARE_PACKAGE = "firmware-nvidia-gsp"
MODULES = ("nvidia.ko", "nvidia-uvm.ko", "nvidia-modeset.ko")  # loaded in this order; drm/peermem not needed
NO_DEBUG_INFO = ("CONFIG_DEBUG_INFO=", "CONFIG_DEBUG_INFO_BTF_MODULES=")  # the kernel config's, off for the build
# What a .run's payload gives the image, by file-name prefix (its 32-bit copies sit in 32/, not taken)
RUN_LIBRARIES = ("libcuda.so", "libnvidia-ml.so", "libnvidia-ptxjitcompiler.so", "libEGL_nvidia.so",
                 "libnvidia-eglcore.so", "libnvidia-glsi.so", "libnvidia-glvkspirv.so", "libnvidia-gpucomp.so",
                 "libnvidia-tls.so")
# The names the loader asks for, where a library's soname is not its full version (a .run holds only the file;
# NVIDIA's installer makes these links, and nothing runs it here)
SONAMES = {"libcuda.so": "1", "libnvidia-ml.so": "1", "libnvidia-ptxjitcompiler.so": "1", "libEGL_nvidia.so": "0"}
EGL_VENDOR = "nvidia/egl_vendor.d/10_nvidia.json"  # init.sh binds /nvidia at /run/nvidia in the VM's view
ARCHIVE = "http://deb.debian.org/debian"
SUITES = (("debian", "bookworm"), ("debian", "bookworm-updates"), ("debian-security", "bookworm-security"))
COMPONENTS = "main contrib non-free non-free-firmware"
KEYRING = "/usr/share/keyrings/debian-archive-keyring.gpg"
CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "gpu-mixed-bench" / "vm-nvidia"
FITTED = "fitted.txt"  # in a cache entry: what was changed in the source to build for that kernel
RUN_NAME = re.compile(r"^NVIDIA-Linux-x86_64-(\d+\.\d+(?:\.\d+)?)(-grid)?\.run$")
RUN_HINT = ("NVIDIA-Linux-x86_64-<version>.run (NVIDIA's driver, passthrough) or NVIDIA-Linux-x86_64-<version>"
            "-grid.run (the GRID guest driver, vGPU; NVIDIA's licensing portal)")

Entry = tuple[str, int, bytes]  # an initramfs entry: path, mode, data


@dataclass
class Layer:
    """What a driver adds to an image: files for the initramfs (path -> mode, bytes) and its manifest entry."""

    version: str
    flavour: str  # OPEN, NVIDIA or GRID: which of NVIDIA's drivers
    source: str  # what a person reads: "open kernel modules (Debian nvidia-open-kernel-source 535.261.03-1 ...)"
    files: list[Entry] = field(default_factory=list)
    file: str = ""  # a .run's file name
    cuda: str = ""  # the CUDA version its libcuda serves
    cuda_from: str = ""  # where that was read
    guest_cuda: dict[str, str] = field(default_factory=dict)  # what the guest's frameworks need, checked at build

    def manifest(self) -> dict[str, object]:
        names = [n for n, _, _ in self.files]
        return {"version": self.version, "flavour": self.flavour, "file": self.file, "source": self.source,
                "cuda": self.cuda, "cuda_from": self.cuda_from, "guest_cuda": self.guest_cuda,
                "modules": [n for n in names if n.endswith(".ko")],
                "firmware": [n for n in names if n.startswith("lib/firmware/")],
                "egl": [n for n in names if n == EGL_VENDOR or Path(n).name.startswith("libEGL_nvidia")]}


@dataclass
class Driver:
    """A driver's files before its modules are built (the CUDA check comes between) and how to build them."""

    layer: Layer  # its user-space, EGL and firmware so far
    cache_key: str  # the module cache entry's name after the kernel release
    build: Callable[[str, Path, Path], None]  # (kernel release, work, out): the modules into out

    def with_modules(self, release: str, work: Path, cache: Path = CACHE) -> Layer:
        """The layer with its kernel modules, built for ``release`` (or taken from the cache)."""
        built = cache / f"{release}-{self.cache_key}"
        modules = cached_modules(built, lambda out: self.build(release, work, out))
        fitted = (built / FITTED).read_text().strip() if (built / FITTED).is_file() else ""
        how = f"built for {release}" + (f"; {fitted}" if fitted else "")
        source = self.layer.source
        source = f"{source[:-1]}, {how})" if source.endswith(")") else f"{source} ({how})"
        return replace(self.layer, files=modules + self.layer.files, source=source)


def check_run_file(path: Path) -> tuple[str, str]:
    """(version, flavour: NVIDIA or GRID) of an NVIDIA driver ``.run`` checked for what it must be; else one
    ConfigError with the reason (a renamed file, a host (vGPU manager) driver, anything else)."""
    if not path.is_file():
        raise ConfigError(f"vm.guest_driver={path}: no such file ({RUN_HINT})")
    m = RUN_NAME.match(path.name)
    if not m:
        raise ConfigError(f"vm.guest_driver={path}: not an NVIDIA guest driver's name ({RUN_HINT}; a "
                          "-vgpu-kvm.run is the host's vGPU manager, not the guest's driver)")
    with path.open("rb") as f:
        head = f.read(16384)
    if not head.startswith(b"#!/bin/sh") or b"makeself" not in head.lower():
        raise ConfigError(f"vm.guest_driver={path}: not a makeself archive (NVIDIA's .run files are; this one "
                          "starts with " + repr(head[:16]) + ")")
    if b"NVIDIA" not in head or m.group(1).encode() not in head:
        raise ConfigError(f"vm.guest_driver={path}: a makeself archive, but not NVIDIA's driver {m.group(1)} "
                          "(its header names neither)")
    makeself.payload_span(path)  # a payload that can be read as data: the stub itself is never run
    return m.group(1), GRID if m.group(2) else NVIDIA


def apt_options(state: Path) -> list[str]:
    """apt with its own sources (main, contrib, non-free, non-free-firmware) and lists in ``state``: the host's own
    lists (often main alone) are neither read nor changed, and no root is needed. Lists fetched for other sources
    are dropped (fetched again at first use)."""
    state.mkdir(parents=True, exist_ok=True)
    (state / "lists" / "partial").mkdir(parents=True, exist_ok=True)
    sources = state / "sources.list"
    text = "".join(f"deb [signed-by={KEYRING}] {ARCHIVE.rsplit('/', 1)[0]}/{repo} {suite} {COMPONENTS}\n"
                   for repo, suite in SUITES)
    if not sources.is_file() or sources.read_text() != text:
        for old in (state / "lists").glob("*Packages*"):
            old.unlink()
        sources.write_text(text)
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


def driver_of(driver: str, work: Path, cache: Path = CACHE) -> Driver:
    """The driver ``driver`` names (OPEN, or a .run's path) with its user-space, EGL and firmware, modules not yet
    built."""
    return open_driver(work, cache) if driver == OPEN else run_driver(Path(driver), work)


def open_driver(work: Path, cache: Path = CACHE) -> Driver:
    """Debian's open kernel modules: the user-space, EGL and GSP firmware of their version, unpacked."""
    state = cache / "apt"
    deb_version = candidate(SOURCE_PACKAGE, state)
    version = deb_version.split("-")[0]
    root = fetch([f"{p}={deb_version}" for p in (*USERSPACE, *EGL_PACKAGES, FIRMWARE_PACKAGE)], work / "userspace",
                 state)
    found = list(root.rglob("*"))
    files = payload([p for p in found if ".so" in p.name or p.name == "nvidia-smi"])
    files += vendor_file([p for p in found if p.name == "10_nvidia.json"])
    files += firmware(root / "lib" / "firmware" / "nvidia" / version, version)
    cuda, cuda_from = cudaver.driver_cuda(next((p for p in found if p.name == f"libcuda.so.{version}"), None),
                                          version)

    def build(release: str, work_dir: Path, out: Path) -> None:
        build_open_modules(release, deb_version, work_dir / "kbuild", out, state)

    layer = Layer(version, OPEN, f"open kernel modules (Debian {SOURCE_PACKAGE} {deb_version})", files,
                  cuda=cuda, cuda_from=cuda_from)
    return Driver(layer, deb_version, build)


def run_driver(run_file: Path, work: Path) -> Driver:
    """NVIDIA's driver or GRID guest driver from the user's ``.run``: unpacked as data (never run, no install on
    this host), its open kernel modules built as Debian's are, its own user-space, EGL and firmware taken along."""
    version, flavour = check_run_file(run_file)
    tree = makeself.unpack(run_file, work / "run")
    top = list(tree.iterdir())
    libraries = [p for p in top if p.name.startswith(RUN_LIBRARIES)]
    files = payload([*libraries, *(p for p in top if p.name == "nvidia-smi")])
    files += soname_links([p.name for p in libraries], version)
    files += vendor_file([p for p in top if p.name == "10_nvidia.json"])
    files += firmware(tree / "firmware", version)
    cuda, cuda_from = cudaver.driver_cuda(tree / f"libcuda.so.{version}", version)

    def build(release: str, work_dir: Path, out: Path) -> None:
        headers, common = kernel_headers(release, work_dir / "kbuild", out.parent / "apt")  # the cache's apt
        make_modules(tree / "kernel-open", headers, common, f"building {run_file.name}'s kernel modules for {release}")
        out.mkdir(parents=True, exist_ok=True)
        keep(tree / "kernel-open", out)

    what = "GRID guest driver" if flavour == GRID else "NVIDIA driver package"
    return Driver(Layer(version, flavour, f"{what} {run_file.name}", files, run_file.name, cuda, cuda_from),
                  f"{flavour}-{version}", build)


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


def cached_modules(built: Path, build: Callable[[Path], None]) -> list[Entry]:
    """The modules in the cache folder ``built`` as initramfs entries; ``build(built)`` first unless all are there
    (the folder of a build that stopped half-way is built again)."""
    if not all((built / m).is_file() for m in MODULES):
        build(built)
    return [(f"nvidia/modules/{m}", 0o100644, (built / m).read_bytes()) for m in MODULES]


def make_modules(tree: Path, headers: Path, common: Path, what: str) -> None:
    """The image's modules (MODULES: not nvidia-drm or nvidia-peermem) compiled without debug information: keep()
    strips it anyway (the same code either way: their ``objdump -d`` is identical), and ``-g`` was ~18 % of the
    build's CPU. Variables on make's command line override the kernel configuration's and reach its sub-makes."""
    wanted = " ".join(m.removesuffix(".ko") for m in MODULES)
    run(["make", f"-j{os.cpu_count() or 1}", f"SYSSRC={common}", f"SYSOUT={headers}", f"NV_KERNEL_MODULES={wanted}",
         *NO_DEBUG_INFO, "modules"], what, tree)


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


def payload(found: list[Path]) -> list[Entry]:
    """``found`` libraries and nvidia-smi as initramfs entries under nvidia/lib and nvidia/bin; a library's
    links (libcuda.so.1 -> libcuda.so.535.261.03) stay links (newc holds them: the target is the data)."""
    files: list[Entry] = []
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


def soname_links(names: list[str], version: str) -> list[Entry]:
    """``libcuda.so.1 -> libcuda.so.<version>`` and the like, for a .run's libraries (see SONAMES)."""
    links = []
    for name in names:
        stem = name.removesuffix(f".{version}")
        if stem in SONAMES and stem != name:
            links.append((f"nvidia/lib/{stem}.{SONAMES[stem]}", 0o120777, name.encode()))
    return links


def vendor_file(found: list[Path]) -> list[Entry]:
    """The driver's glvnd EGL vendor file (it names ``libEGL_nvidia.so.0``, found through LD_LIBRARY_PATH)."""
    return [(EGL_VENDOR, 0o100644, found[0].read_bytes())] if found else []


def firmware(folder: Path, version: str) -> list[Entry]:
    """The GSP firmware (``gsp_*.bin``) where the kernel's loader looks for it when the module asks for
    ``nvidia/<version>/gsp_*.bin``: /lib/firmware of the initramfs, the root the kernel's own loader reads."""
    return [(f"lib/firmware/nvidia/{version}/{p.name}", 0o100644, p.read_bytes())
            for p in sorted(folder.glob("gsp_*.bin"))]
