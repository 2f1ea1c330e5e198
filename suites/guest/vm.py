"""A guest inside a VM (``python -m suites.guest.vm``, run by the VM's init): the host's clock first, then the
ordinary guest (:mod:`suites.guest.__main__`) on the same port.

A VM's clock starts from its emulated RTC (whole seconds) and, under TCG, has no paravirtual clock to follow the
host's; the guests' training intervals are compared across VMs, so each VM takes the host's time at boot: it says
``boot`` and the host answers ``clock <epoch seconds>`` (then sends the spec), a round trip of milliseconds.
"""

from __future__ import annotations

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


if __name__ == "__main__":
    sync_clock()
    sys.exit(main())
