"""``backend=vm``: each guest is a QEMU VM on this host; the hypervisor gives it its vCPUs, memory and GPU.

The runner's supervision is unchanged: a VM is a :class:`~suites.backends.handle.GuestPipe` whose process is
QEMU, whose stdin/stdout are the guest's virtio-serial port (the same JSON lines as a local guest's pipe), and
whose log is the VM's serial console. Inside, ``python -m suites.guest.vm`` (from its read-only view of the host
over virtiofs: share.py) asks for the host's clock, then is an ordinary guest. QEMU and its virtiofsd share one
process group (killed as one) and die with the runner (``setpriv --pdeathsig KILL``); each vCPU thread is pinned to
one of the placement's cores (QMP). Memory is the hypervisor's: ``-m`` = the profile's, and a guest over it meets
its own kernel's OOM killer, so the runner's RSS check does not apply (QEMU's RSS is not the guest's).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import replace
from pathlib import Path
from typing import Any

from gpu_probe.inventory import Inventory
from gpu_probe.shapes import JsonObject
from gpu_probe.trace import TRACE_ENV
from suites.backends.base import Backend
from suites.backends.handle import REPO_ROOT, GuestHandle, GuestPipe
from suites.backends.leftovers import own_dir, state_root
from suites.backends.local import on_free_cores
from suites.backends.placement import Placement, check_memory, no_gpu_note, place_cpus
from suites.backends.vm import boot, cudaver, devices, nvidia, qemu, share
from suites.backends.vm.image import DEFAULT_DIR, NVIDIA_DIR, Image, find
from suites.config.profiles import GpuAccess, ProfileConfig
from suites.config.schema import VmConfig
from suites.errors import ConfigError, DataError, PlacementError
from suites.guest.protocol import GuestSpec
from suites.guest.setup import environment
from suites.poll import wait_until
from suites.validity import ENFORCED, NOT_ENFORCED, TCG_EMULATION

SOCKET_ROOT_MAX = 64  # + /gmb-vm-<pid>-<8>/g0.qmp stays under a socket path's 107 bytes
CONSOLE_TAIL = 5  # console lines quoted in a boot failure
HIDDEN = (Path("/run"), Path("/dev"), Path("/proc"), Path("/sys"))  # the VM's own mounts over the host's root
NOT_A_REASON = re.compile(r"^bench-vm: guest exited|\breboot: Power down")  # init's and the kernel's last words


class VmBackend(Backend):
    name = "vm"
    holds_host_cores = True

    def __init__(self, cfg: VmConfig, cpu_overcommit: bool = False) -> None:
        """Everything a VM needs is checked here, before any starts: the image, QEMU, virtiofsd, the accelerator."""
        self.cfg = cfg
        self.cpu_overcommit = cpu_overcommit
        self.sysfs = Path(cfg.sysfs)
        self.image = image_for(cfg)
        self.qemu, self.virtiofsd = qemu.tools()
        self.accel = accel_for(cfg.accel.value, self.image, self.qemu, cfg.kvm_probe_s)
        self.devices: dict[str, list[str]] = {}  # guest id -> vfio-pci args (passthrough) once placed
        self.vgpu: dict[str, devices.MdevType] = {}  # guest id -> the mdev type it gets an instance of
        self.made: list[str] = []  # mdev UUIDs this run created (removed by shutdown, on every path)
        self.socket_dirs: list[Path] = []

    def place(self, profile: ProfileConfig, n: int, inv: Inventory) -> list[Placement]:
        return on_free_cores(lambda free: self._place(profile, n, inv, free))

    def _place(self, profile: ProfileConfig, n: int, inv: Inventory, free: list[int]) -> list[Placement]:
        cpus = place_cpus(n, profile.vcpus, free, self.cpu_overcommit and bool(free))
        tcg = self.accel.name == "tcg"
        check_memory(profile, n, inv.mem_total_MiB, "VM(s)", qemu.TCG_CACHE_MiB if tcg else 0,
                     "TCG translation cache")
        ids = [f"g{i}" for i in range(n)]
        gpu_notes, gpus, validity = self._place_gpus(profile, ids, inv)
        notes = [f"VM ({self.accel.name.upper()}, {profile.vcpus} vCPUs, {profile.memory_MiB} MiB, "
                 f"{self.image.release}" + (f"; {self.image.driver_text()})" if self.image.driver else ")")]
        reason = ""
        if tcg:
            validity, reason = NOT_ENFORCED, TCG_EMULATION
            notes.append(f"{TCG_EMULATION} ({self.accel.note})")
        # gpu_probe's recorded NVML answers, where the runner replays one (the tests: no GPU here), stand in for
        # the VM's driver too: its guest samples "its GPU" from the same trace (the file is then in the VM's view)
        trace = {TRACE_ENV: os.environ[TRACE_ENV]} if os.environ.get(TRACE_ENV) else {}
        return [Placement(ids[i], cpus[i], [], gpus[i], "; ".join(x for x in (*notes, gpu_notes[i]) if x),
                          env=dict(trace), validity=validity, reason=reason) for i in range(n)]

    def _place_gpus(self, profile: ProfileConfig, ids: list[str],
                    inv: Inventory) -> tuple[list[str], list[list[str]], str]:
        """(a note per guest, what each guest's CUDA_VISIBLE_DEVICES holds inside its VM, validity)."""
        n = len(ids)
        if not devices.needs_device(profile):
            return [""] * n, [[] for _ in ids], ENFORCED
        if not inv.has_gpu and not devices.nvidia_gpus(self.sysfs):
            return [no_gpu_note(profile)] * n, [[] for _ in ids], NOT_ENFORCED
        inside = [str(k) for k in range(profile.gpus)]  # the VM's own GPUs, numbered from 0
        driver = self.image.driver or {}
        version = str(driver.get("version", ""))  # an image built before its manifest said its CUDA: the table's
        too_old = cudaver.mismatch(version, str(driver.get("cuda") or cudaver.branch_cuda(version)),
                                   cudaver.guest_needs(), "vm.guest_driver") if driver else ""
        if too_old:  # every GPU guest would end a CPU fallback: said before any VM starts
            raise PlacementError(f"backend=vm: the VM image in {self.image.dir}: {too_old}")
        if profile.gpu_access is GpuAccess.passthrough:
            args = devices.passthrough_for(profile, n, self.sysfs)
            self.devices = dict(zip(ids, args, strict=True))
            return [f"VFIO passthrough {', '.join(a.removeprefix('host=') for a in g)}" for g in args], \
                [inside] * n, ENFORCED
        if self.image.driver_flavour() != nvidia.GRID:  # nothing but NVIDIA's GRID guest driver drives an mdev
            held = self.image.driver_text() if self.image.driver else "none"
            raise PlacementError(f"backend=vm: vGPU profile {profile.name} needs NVIDIA's GRID guest driver in the VM "
                                 f"image, and {self.image.dir}'s driver is {held}: build one with make setup-vm "
                                 "VM_DRIVER=<NVIDIA-Linux-x86_64-<version>-grid.run> (NVIDIA's licensing portal) and "
                                 f"run with vm.image_dir={NVIDIA_DIR}")
        # Counted as free: the slots that instances of killed runs hold, which start() removes (placement only
        # computes; it may be asked several times, while waiting for cores, and changes nothing on the host).
        types = devices.vgpu_types_for(profile, n, self.sysfs, devices.reclaimable(self.sysfs))
        self.vgpu = dict(zip(ids, types, strict=True))
        return [f"vGPU {t.name} ({t.type_id}) on {t.parent}" for t in types], [inside] * n, ENFORCED

    def check_data(self, data: JsonObject) -> None:
        """A VM sees the data folders its spec names, except where its own memory is mounted (init.sh): data there
        is not seen."""
        root = Path(str(data.get("root") or "/")).resolve()
        hidden = next((h for h in HIDDEN if root == h or h in root.parents), None)
        if hidden is not None:
            raise DataError(f"data root {root} is under {hidden}, which a VM mounts from its own memory: it would "
                            "not see the data; put it elsewhere (data.root, data.cache_dir)")

    def start(self, specs: list[GuestSpec], placements: list[Placement], log_dir: Path,
              started: list[GuestHandle]) -> None:
        if self.vgpu:  # once, the placement settled: the instances killed runs left, before this run makes its own
            reclaimed = devices.reclaim_mdevs(self.sysfs)
            for p in placements if reclaimed else []:
                p.note += f"; removed mdev {', '.join(reclaimed)} left by a killed run"
        sockets = own_dir("gmb-vm-", socket_root())  # a SIGKILLed runner's are removed here
        self.socket_dirs.append(sockets)
        for spec, p in zip(specs, placements, strict=True):
            vfio = list(self.devices.get(spec.guest_id, []))
            if spec.guest_id in self.vgpu:
                made = str(uuid.uuid4())
                vfio.append(devices.create_mdev(self.vgpu[spec.guest_id], made, self.sysfs))
                self.made.append(made)
                p.note += f"; mdev {made}"
            machine = qemu.Machine(spec.guest_id, len(p.vcpus), spec.memory_MiB, self.accel.name, self.image,
                                   log_dir / f"{spec.guest_id}.vm.sh", sockets / f"{spec.guest_id}.fs",
                                   sockets / f"{spec.guest_id}.qmp", log_dir / f"{spec.guest_id}.log", vfio)
            pipe = VmPipe(machine, p, (self.qemu, self.virtiofsd), self.cfg.boot_timeout_s)
            started.append(GuestHandle(spec, machine.console, pipe))
            pipe.start(spec)

    def shutdown(self) -> None:
        """Remove every mdev instance this run made (the VMs using them are stopped already), and the sockets."""
        while self.made:
            devices.remove_mdev(self.made.pop(), self.sysfs)
        while self.socket_dirs:
            shutil.rmtree(self.socket_dirs.pop(), ignore_errors=True)


_ACCEL: dict[tuple[str, Path, str, float], qemu.Accel] = {}


def accel_for(wanted: str, image: Image, qemu_bin: str, probe_s: float) -> qemu.Accel:
    """Probed once per process (a comparison's phases would otherwise each pay the KVM test boot)."""
    key = (wanted, image.kernel, qemu_bin, probe_s)
    if key not in _ACCEL:
        _ACCEL[key] = qemu.choose_accel(wanted, image, qemu_bin, probe_s)
    return _ACCEL[key]


def socket_root() -> Path:
    """Where a run's VM sockets go: the host's benchmark state (suites/backends/leftovers.py), unless its path is too
    long for them (a Unix socket's path has 107 bytes), then the system's temp dir."""
    state = state_root() / "vm"
    return state if len(str(state)) <= SOCKET_ROOT_MAX else Path(tempfile.gettempdir())


class VmPipe(GuestPipe):
    """One guest VM seen as a pipe: QEMU's stdin/stdout are the guest's protocol port, its console is the log."""

    def __init__(self, machine: qemu.Machine, placement: Placement, tools: tuple[str, str],
                 boot_timeout_s: float) -> None:
        super().__init__(machine.console)
        self.machine = machine
        self.placement = placement  # its note and validity take what the VM's boot said of its GPU (boot.py)
        self.host_cpus = placement.vcpus
        self.qemu_bin, self.virtiofsd = tools
        self.boot_timeout_s = boot_timeout_s
        self.fsd: subprocess.Popen[bytes] | None = None
        self.t_qemu: float | None = None  # monotonic: QEMU started
        self._spec_line = ""
        self.gave_up = False  # killed for not booting in time
        self.facts: JsonObject = {}  # <guest>.vm.json; boot_s once the guest's first line came

    def start(self, spec: GuestSpec, keep_lines: bool = False) -> int:
        m = self.machine
        inside = replace(spec, vcpus=list(range(len(spec.vcpus))))  # the VM's own CPUs; the host's are QEMU's
        self._spec_line = inside.to_line()
        m.boot_script.write_text(boot_script(inside))
        argv = qemu.qemu_argv(m, self.qemu_bin)
        log = m.console.with_suffix(".qemu.log").open("w")
        wrap = ["setpriv", "--pdeathsig", "KILL", "taskset", "-c", ",".join(map(str, self.host_cpus))]
        view = m.fs_socket.with_suffix(".view")  # what of the host the guest sees (share.py), built there
        view.mkdir()
        fsd = share.virtiofsd_in_view(qemu.virtiofsd_argv(self.virtiofsd, m.fs_socket, view), view, inside,
                                      m.boot_script.parent)
        self.fsd = subprocess.Popen([*wrap, *fsd], stdin=subprocess.DEVNULL, stdout=log, stderr=log, process_group=0)
        self.group = self.fsd.pid  # a group of their own, not the terminal's: Ctrl-C reaches only the runner
        wait_for(m.fs_socket, 10.0, self.fsd)
        self.proc = subprocess.Popen([*wrap, *argv], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log,
                                     text=True, bufsize=1, process_group=self.group)
        log.close()
        self.t_qemu = time.monotonic()
        self.pid = self.proc.pid
        self.facts = {"qemu": argv, "virtiofsd": fsd, "host_cpus": self.host_cpus, "qemu_pid": self.pid,
                      "group": self.group, "t_qemu": time.time()}
        self.save_facts()
        self.start_reader(f"vm-{spec.guest_id}-reader", keep_lines)
        self.pin_vcpus()
        return self.pid

    def save_facts(self) -> None:
        """``<guest>.vm.json``: how the VM was started (QEMU's command, pids) and when it booted and was ready
        (host epoch seconds; boot_s from QEMU's start to the guest's first protocol line)."""
        self.machine.boot_script.with_suffix(".json").write_text(json.dumps(self.facts, indent=1))

    def pin_vcpus(self) -> None:
        """Each vCPU thread on one of the placement's cores (the whole VM already runs only on them: taskset)."""
        try:
            threads = qemu.vcpu_threads(self.machine.qmp_socket)
            for tid, core in zip(threads, self.host_cpus, strict=False):
                os.sched_setaffinity(tid, {core})
        except (OSError, ValueError) as exc:
            with self.machine.console.with_suffix(".qemu.log").open("a") as f:
                f.write(f"bench: vCPU threads not pinned one per core ({exc}); the VM still runs only on "
                        f"cores {self.host_cpus}\n")

    def forward(self, ev: JsonObject) -> bool:
        """The guest's first line (``boot``) is the VM's own: answered with the host's clock, then the spec."""
        if ev["event"] == "boot":
            self.send(f"clock {time.time():.6f}")
            self.send(self._spec_line)
            self.facts.update(t_boot=time.time(), boot_s=time.monotonic() - (self.t_qemu or time.monotonic()),
                              gpu_boot=ev.get("gpu_boot"))
            boot.apply(self.placement, ev.get("gpu_boot"))
            self.save_facts()
            return False
        if ev["event"] == "ready":
            self.facts["t_ready"] = time.time()
            self.save_facts()
        return True

    def drain(self) -> list[JsonObject]:
        out = super().drain()
        late = "boot_s" not in self.facts and self.t_qemu is not None and \
            time.monotonic() - self.t_qemu > self.boot_timeout_s
        if late and not self.gave_up and self.returncode() is None:
            self.gave_up = True
            self.kill()
            tail = console_tail(self.machine.console, CONSOLE_TAIL)
            out.append({"event": "error", "error": f"VM did not boot within vm.boot_timeout_s="
                        f"{self.boot_timeout_s:g} s (console {self.machine.console.name}: {' | '.join(tail)})"})
        return out

    def returncode(self) -> int | None:
        """The guest's exit status as the VM's init saw it (a signal as -N), else QEMU's."""
        code = super().returncode()
        if code is None:
            return None
        said = guest_exit(self.machine.console)
        return said if said is not None else code

    def log_tail(self) -> str:
        """Why the guest ended, from the VM's side: its kernel's OOM kill, its last console line, or (the VM itself
        ended before its guest said how it exited) QEMU's last error line."""
        console = self.machine.console
        text = read(console)  # once: the console of a VM that ended
        if "Out of memory: Killed process" in text:
            return (f"the VM's kernel killed it: out of memory (-m {self.machine.memory_MiB} MiB, the profile's "
                    "memory)")
        last = tail(text, 20)
        lines = [ln for ln in last if not NOT_A_REASON.search(ln)]
        if exit_code_in(last) is not None:
            return lines[-1][:200] if lines else ""
        errors = [ln for ln in console_tail(console.with_suffix(".qemu.log"), 20) if ln.startswith("qemu")]
        seen = f"QEMU: {errors[-1]}" if errors else f"console: {lines[-1]}" if lines else "no console output"
        return f"the VM ended before its guest reported; {seen}"[:240]

    def rss_MiB(self) -> float:
        return 0.0  # the hypervisor enforces the guest's memory; QEMU's RSS (its own + TCG's caches) is not it

    def processes(self) -> list[subprocess.Popen[Any]]:
        return [p for p in (self.proc, self.fsd) if p is not None]  # QEMU and its virtiofsd: one process group


def image_for(cfg: VmConfig) -> Image:
    """The image the run boots: the one ``vm.image_dir`` names, else ``.vm`` (``.vm-nvidia`` with a
    ``vm.guest_driver``), holding that driver; a fake .run or an image without it is one ConfigError."""
    if cfg.guest_driver and cfg.guest_driver != nvidia.OPEN:
        nvidia.check_run_file(Path(cfg.guest_driver))
    build = f"make setup-vm VM_DRIVER={shlex.quote(cfg.guest_driver)}" if cfg.guest_driver else "make setup-vm"
    try:
        img = find(Path(cfg.image_dir) if cfg.image_dir else NVIDIA_DIR if cfg.guest_driver else DEFAULT_DIR)
    except ConfigError as exc:  # the build that gives an image with this driver, not the plain one
        raise ConfigError(str(exc).replace("`make setup-vm`", f"`{build}`", 1)) from None
    if cfg.guest_driver and not img.holds(cfg.guest_driver):
        raise ConfigError(f"vm.guest_driver={cfg.guest_driver}: the VM image in {img.dir} holds {img.driver_text()}"
                          f"; build it with {build}")
    return img


def boot_script(spec: GuestSpec) -> str:
    """What the VM's init runs (in its read-only view of the host): the guest's environment, then the guest. Scratch
    (HOME, TMPDIR) is the VM's own memory; the run directory and the data folders its spec names are in the view."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": "/run/home", "TMPDIR": "/run",
           "LC_ALL": "C.UTF-8", "PYTHONDONTWRITEBYTECODE": "1", "PYTHONPATH": str(REPO_ROOT),
           **environment(spec)}
    lines = ["mkdir -p /run/home"] + [f"export {k}={shlex.quote(v)}" for k, v in env.items()]
    # an image's NVIDIA user-space (init.sh binds it there), before the host's: CUDA and NVML load it by name
    lines += ['[ -d /run/nvidia/lib ] && export LD_LIBRARY_PATH="/run/nvidia/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" '
              'PATH="/run/nvidia/bin:$PATH"']
    # and its EGL vendor file before the view's (Mesa's stays listed: a guest without the GPU still renders);
    # an __EGL_VENDOR_LIBRARY_FILENAMES the guest's environment names wins over these folders, as libglvnd reads
    lines += ['[ -d /run/nvidia/egl_vendor.d ] && export __EGL_VENDOR_LIBRARY_DIRS="/run/nvidia/egl_vendor.d:'
              '/etc/glvnd/egl_vendor.d:/usr/share/glvnd/egl_vendor.d"']
    lines += [f"cd {shlex.quote(str(REPO_ROOT))}", f"exec {shlex.quote(sys.executable)} -m suites.guest.vm"]
    return "\n".join(lines) + "\n"


def wait_for(path: Path, timeout_s: float, proc: subprocess.Popen[bytes]) -> None:
    if not wait_until(lambda: path.exists() or proc.poll() is not None, timeout_s, 0.01) or not path.exists():
        raise OSError(f"virtiofsd did not open {path} (exit {proc.poll()}; see the .qemu.log)")


def guest_exit(console: Path) -> int | None:
    return exit_code_in(console_tail(console, 20))


def exit_code_in(lines: list[str]) -> int | None:
    """The code init.sh reported ('bench-vm: guest exited with code N'; 128+S is signal S, as -S)."""
    for line in reversed(lines):
        if line.startswith("bench-vm: guest exited with code "):
            code = int(line.rsplit(" ", 1)[1])
            return -(code - 128) if code > 128 else code
    return None


def console_tail(console: Path, n: int) -> list[str]:
    return tail(read(console), n)


def tail(text: str, n: int) -> list[str]:
    """The last ``n`` non-empty lines, without the firmware's screen-control lines."""
    return [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.startswith("\x1b")][-n:]


def read(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return ""
