"""A guest inside a VM (``python -m suites.guest.vm``, run by the VM's init): the host's clock first, then the
ordinary guest (:mod:`suites.guest.__main__`) on the same port.

A VM's clock starts from its emulated RTC (whole seconds) and, under TCG, has no paravirtual clock to follow the
host's; the guests' training intervals are compared across VMs, so each VM takes the host's time at boot: it says
``boot`` and the host answers ``clock <epoch seconds>`` (then sends the spec), a round trip of milliseconds.
"""

from __future__ import annotations

import ctypes
import os
import sys
import time
from collections.abc import Callable

from gpu_probe import cudainit
from gpu_probe.nvml import Nvml
from gpu_probe.sampler import Sampler
from gpu_probe.trace import TRACE_ENV, lib_from_env
from suites.guest.__main__ import main
from suites.guest.protocol import event

BOOT_NOTES = "/run/bench-vm/nvidia.txt"  # what the VM's init said of its NVIDIA driver (init.sh)


def gpu_boot(notes: str = BOOT_NOTES) -> dict[str, object]:
    """What the VM's init found of its NVIDIA driver (module, firmware, nvidia-smi, EGL lines) and whether CUDA
    starts here (a cuInit and device count in a child process), said on the console: the runner puts them in the
    guest's placement note, and the guest is enforced only where CUDA started on its GPU."""
    try:
        with open(notes) as f:
            lines = [line.strip() for line in f if line.strip()]
    except OSError:
        lines = []
    cuda = cudainit.check()
    print(f"bench-vm: cuda: {cuda['text']}", file=sys.stderr, flush=True)
    return {"lines": lines, "cuda": cuda}


def sync_clock(boot: dict[str, object]) -> None:
    sys.stdout.write(event("boot", uptime_s=time.clock_gettime(time.CLOCK_BOOTTIME), gpu_boot=boot))
    sys.stdout.flush()
    word, _, value = sys.stdin.readline().partition(" ")
    if word != "clock":
        raise SystemExit(f"expected the host's clock, got {word!r}")
    try:
        time.clock_settime(time.CLOCK_REALTIME, float(value))
    except (OSError, ValueError) as exc:  # not root in the VM: intervals are then off by the RTC's error
        print(f"bench-vm: clock not set from the host's ({exc})", file=sys.stderr)


def say_nvml_library(lib_dir: str = "/run/nvidia/lib") -> None:
    """Where an image holds NVIDIA's user-space (init.sh binds it at /run/nvidia), which libnvidia-ml this guest
    loads, on the console: the image's, of its kernel module's version, not the host's."""
    if not os.path.isdir(lib_dir):
        return
    try:
        ctypes.CDLL("libnvidia-ml.so.1")
    except OSError as exc:
        print(f"bench-vm: NVML not loadable ({exc})", file=sys.stderr)
        return
    with open("/proc/self/maps") as maps:
        path = next((line.split()[-1] for line in maps if "libnvidia-ml" in line), "?")
    print(f"bench-vm: NVML from {path}", file=sys.stderr)


class OwnGpu:
    """The VM's GPU sampled from inside (as a fleet node samples its own): where the image's driver is loaded
    (/sys/module/nvidia) or an NVML trace stands in for one. A VFIO-bound GPU is not in the host's NVML: these rows are
    the only GPU series of the guest; they go to the runner as one ``samples`` event before the result."""

    def __init__(self, rate_hz: float = 10.0) -> None:
        lib, self.trace = lib_from_env()
        self.sampler = Sampler(rate_hz, nvml=Nvml(lib)).__enter__()

    @classmethod
    def wanted(cls) -> bool:
        # the module loaded (init.sh loads it only for a device): nvidia-smi makes /dev/nvidiactl even without one
        return os.path.isdir("/sys/module/nvidia") or bool(os.environ.get(TRACE_ENV))

    def send(self, send: Callable[[str], None]) -> None:
        s = self.sampler
        s.__exit__(None, None, None)
        own = s.ship(0, lambda r: {k: v for k, v in r.items() if k.startswith("gpu")})
        send(event("samples", samples={**own, "where": "inside its VM", "trace": self.trace}))


if __name__ == "__main__":
    say_nvml_library()
    sync_clock(gpu_boot())  # first: the VM's samples are stamped on the host's clock
    own = OwnGpu() if OwnGpu.wanted() else None
    sys.exit(main(own.send if own else None))
