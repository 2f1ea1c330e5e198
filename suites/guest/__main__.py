"""Guest worker: ``python -m suites.guest`` speaks the protocol on stdin/stdout.

The runner starts it with the guest's environment (threads, visible GPUs;
:func:`suites.guest.setup.environment`); it pins its vCPUs, prepares the
workload, waits at the start barrier, then runs and reports. Its original
stdout is kept for protocol lines only; library chatter on fd 1 is sent to
stderr (the log).
"""

from __future__ import annotations

import io
import os
import sys
import traceback
from collections.abc import Callable
from typing import TextIO

from gpu_probe.procfs import started_at
from suites import process_gc
from suites.guest.protocol import GuestSpec, event, signed
from suites.guest.setup import apply_resources, die_with_parent
from suites.guest.worker import failure_text, run


class LogStream(io.TextIOWrapper):
    """The guest's log (its stderr, a file in the run directory): a disk that fills during the run stops the log,
    never the guest, whose figures still reach the runner through the protocol pipe."""

    def write(self, text: str) -> int:
        try:
            return super().write(text)
        except OSError:
            return len(text)

    def flush(self) -> None:
        try:
            super().flush()
        except OSError:
            pass


def protocol_stream() -> TextIO:
    """Keep a private copy of stdout for protocol lines; fd 1 becomes stderr; both log streams outlive a full
    disk."""
    fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = LogStream(io.FileIO(1, "w", closefd=False), line_buffering=True)
    sys.stderr = LogStream(io.FileIO(2, "w", closefd=False), line_buffering=True)
    return os.fdopen(fd, "w", buffering=1)


def main(before_result: Callable[[Callable[[str], None]], None] | None = None) -> int:
    """The guest; ``before_result`` may send events of its own just before the result (or the error) goes."""
    t_proc_start = _process_start_time()
    proto = protocol_stream()
    die_with_parent()

    nonce = [""]

    def send(line: str) -> None:
        proto.write(signed(line, nonce[0]))
        proto.flush()

    try:
        spec = GuestSpec.from_line(sys.stdin.readline())
    except (ValueError, TypeError) as exc:
        send(event("error", error=f"bad guest spec: {exc}"))
        return 2
    nonce[0] = spec.nonce
    apply_resources(spec)
    try:
        result = run(spec, send, t_proc_start)
    except Exception as exc:  # a guest reports its failure; it never hangs the runner
        traceback.print_exc()
        last, code = event("error", error=failure_text(exc, spec)), 1
    else:
        result.pid = os.getpid()
        result.affinity = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
        last, code = event("result", result=result.as_dict()), 0 if result.ok else 1
    if before_result is not None:
        before_result(send)
    send(last)
    return code


def _process_start_time() -> float:
    """To a clock tick: psutil's create_time is up to a second off (gpu_probe.procfs.started_at)."""
    return started_at()


if __name__ == "__main__":
    code = main()
    process_gc.ending()  # the result is sent: the interpreter's finalisation has nothing to collect
    sys.exit(code)
