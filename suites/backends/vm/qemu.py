"""QEMU for one guest VM: its command line, the virtiofs daemon beside it, KVM-or-TCG, and its vCPU threads.

Everything here is a pure function of a :class:`Machine` except :func:`probe_kvm` (a bounded test boot) and
:func:`vcpu_threads` (QMP), so the command lines are tested without a hypervisor.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from suites.backends.vm.image import Image
from suites.errors import ConfigError

QEMU = "qemu-system-x86_64"
# The C daemon shipped with QEMU up to 8.0 (Debian 12: qemu-system-common), then the Rust one (package virtiofsd).
VIRTIOFSD = ("/usr/libexec/virtiofsd", "/usr/lib/qemu/virtiofsd")
PORT = "bench"  # the virtio-serial port's name, which init.sh looks for
# TCG's translation cache, host memory a TCG VM takes beside its guest's: QEMU 7.2's own default on a host with 8 GiB
# or more (min(1 GiB, host memory / 8)), given explicitly so that placement can count it. Measured here: an MNIST
# smoke in a 2048 MiB TCG VM peaked at 1,817 MiB RSS, 1,103 MiB of it guest memory and most of the rest this cache.
TCG_CACHE_MiB = 1024


@dataclass(frozen=True)
class Accel:
    """How VMs run on this host, and why."""

    name: str  # kvm | tcg: QEMU's -accel, as vm.accel names it
    note: str = ""  # why TCG, when it is


@dataclass
class Machine:
    """One guest VM's hardware."""

    name: str
    vcpus: int
    memory_MiB: int
    accel: str  # kvm | tcg
    image: Image
    boot_script: Path  # in the run directory on the host, read by the VM through its view of the host
    fs_socket: Path  # virtiofsd's vhost-user socket
    qmp_socket: Path
    console: Path  # the serial console: kernel lines, init's lines, the guest's stderr
    vfio: list[str] = field(default_factory=list)  # -device vfio-pci args: host=<PCI address> | sysfsdev=<mdev>


def qemu_argv(m: Machine, qemu: str = QEMU) -> list[str]:
    """The QEMU command: the protocol port on QEMU's own stdin/stdout, the console to a file, no network, no disk,
    no display; guest memory shared with virtiofsd (vhost-user needs it), the same size the profile gives."""
    accel = ["-accel", "kvm", "-cpu", "host"] if m.accel == "kvm" else \
        ["-accel", f"tcg,tb-size={TCG_CACHE_MiB}", "-cpu", "max"]
    argv = [qemu, "-name", f"{m.name},debug-threads=on",  # threads named "CPU 0/KVM": seen pinned in top
            *accel, "-smp", str(m.vcpus), "-m", f"{m.memory_MiB}M",
            "-object", f"memory-backend-memfd,id=mem,size={m.memory_MiB}M,share=on", "-numa", "node,memdev=mem",
            *boot_argv(m.image, f"quiet bench.boot={m.boot_script}", m.console),
            "-chardev", f"socket,id=fs,path={m.fs_socket}", "-device", "vhost-user-fs-pci,chardev=fs,tag=host",
            "-device", "virtio-serial-pci", "-chardev", "stdio,id=proto,signal=off",
            "-device", f"virtserialport,chardev=proto,name={PORT}",
            "-qmp", f"unix:{m.qmp_socket},server=on,wait=off"]
    for dev in m.vfio:
        argv += ["-device", f"vfio-pci,{dev}"]
    return argv


def boot_argv(image: Image, params: str, console: Path) -> list[str]:
    """What every boot of the image has: no default devices, display or reboot; the kernel and initramfs with
    init.sh's parameters; the serial console to a file."""
    return ["-nodefaults", "-no-user-config", "-nographic", "-no-reboot", "-kernel", str(image.kernel),
            "-initrd", str(image.initrd), "-append", f"console=ttyS0 panic=-1 {params}", "-serial", f"file:{console}"]


def virtiofsd_argv(binary: str, sock: Path, source: Path) -> list[str]:
    """``source`` (the guest's view of the host: suites/backends/vm/share.py) for one VM, mounted read-only by the
    guest's init (the C daemon has no read-only export; the view's bind mounts are read-only)."""
    if binary.startswith("/usr/libexec/"):  # the Rust daemon
        return [binary, f"--socket-path={sock}", f"--shared-dir={source}", "--cache=always", "--sandbox=chroot",
                "--readonly"]
    return [binary, f"--socket-path={sock}", "-o", f"source={source}", "-o", "cache=always", "-o", "sandbox=chroot"]


def tools(qemu: str = QEMU) -> tuple[str, str]:
    """(qemu, virtiofsd) on this host, or one ConfigError naming what to install."""
    found = shutil.which(qemu)
    if found is None:
        raise ConfigError(f"backend=vm: {qemu} not found (make setup-vm installs Debian's qemu-system-x86)")
    fsd = next((p for p in VIRTIOFSD if os.access(p, os.X_OK)), None)
    if fsd is None:
        raise ConfigError(f"backend=vm: no virtiofsd at {' or '.join(VIRTIOFSD)} (Debian: qemu-system-common <= 8.0 "
                          "or the virtiofsd package)")
    return found, fsd


def kvm_usable() -> str:
    """'' when /dev/kvm can be opened for a VM, else why not."""
    try:
        fd = os.open("/dev/kvm", os.O_RDWR | os.O_CLOEXEC)
    except OSError as exc:
        return f"/dev/kvm: {exc.strerror}"
    os.close(fd)
    return ""


def probe_kvm(image: Image, qemu: str, timeout_s: float) -> tuple[str, str]:
    """Boot the image once under KVM (init says 'probe booted' and powers off): ('booted' | 'failed' | 'hung',
    its last words: the console's last line, else QEMU's first error).
    Bounded: a nested KVM that hangs in the guest's early boot (as on this suite's CI host) costs ``timeout_s``."""
    with tempfile.TemporaryDirectory(prefix="vm-probe-") as tmp:
        console = Path(tmp) / "console"
        argv = [qemu, "-accel", "kvm", "-cpu", "host", "-m", "256M", *boot_argv(image, "bench.probe=1", console)]
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                text=True, errors="replace", start_new_session=True)
        outcome = "failed"
        try:
            _, err = proc.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            _, err = proc.communicate()
            outcome = "hung"
        text = console.read_text(errors="replace") if console.exists() else ""
        if "probe booted" in text:
            return "booted", ""
        said = [ln.strip() for ln in text.splitlines() if ln.strip()]
        errors = [ln.strip() for ln in (err or "").splitlines() if ln.strip()]
        return outcome, (said[-1] if said else errors[0] if errors else "no output")[:160]


def choose_accel(wanted: str, image: Image, qemu: str, probe_s: float) -> Accel:
    """``vm.accel``: kvm (refused in one line where /dev/kvm cannot be used), tcg, or auto (a bounded KVM test
    boot, else TCG with the reason)."""
    if wanted == "tcg":
        return Accel("tcg", "vm.accel=tcg")
    why = kvm_usable()
    if wanted == "kvm":
        if why:
            raise ConfigError(f"vm.accel=kvm: {why} (vm.accel=auto falls back to TCG)")
        return Accel("kvm")
    if why:
        return Accel("tcg", f"KVM unusable ({why})")
    outcome, last = probe_kvm(image, qemu, probe_s)
    if outcome == "booted":
        return Accel("kvm")
    what = f"did not finish within {probe_s:g} s" if outcome == "hung" else "failed"
    return Accel("tcg", f"a KVM test boot {what} (its last words: {last!r})")


def vcpu_threads(qmp_socket: Path, timeout_s: float = 10.0) -> list[int]:
    """The host thread id of each vCPU, in vCPU order, from QEMU's QMP (query-cpus-fast)."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
                s.settimeout(max(0.5, deadline - time.monotonic()))
                s.connect(str(qmp_socket))
                stream = s.makefile("rw")
                _reply(stream, None)  # the greeting
                _reply(stream, "qmp_capabilities")
                cpus = _reply(stream, "query-cpus-fast")
                return [int(c["thread-id"]) for c in sorted(cpus, key=lambda c: c["cpu-index"])]
        except (OSError, ValueError, KeyError):
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def _reply(stream, command: str | None):  # noqa: ANN001, ANN202 (a socket file; QMP's JSON)
    if command is not None:
        stream.write(json.dumps({"execute": command}) + "\n")
        stream.flush()
    while True:
        msg = json.loads(stream.readline() or "null")
        if msg is None:
            raise OSError("QMP closed")
        if "QMP" in msg and command is None:
            return msg
        if "return" in msg:
            return msg["return"]
        if "error" in msg:
            raise ValueError(f"QMP {command}: {msg['error']}")
