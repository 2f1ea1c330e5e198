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

from suites.guest.__main__ import main
from suites.guest.protocol import event


def sync_clock() -> None:
    sys.stdout.write(event("boot", uptime_s=time.clock_gettime(time.CLOCK_BOOTTIME)))
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


if __name__ == "__main__":
    say_nvml_library()
    sync_clock()
    sys.exit(main())
