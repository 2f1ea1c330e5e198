"""A command run by a test, guarded by its progress rather than by a wall-clock total.

A total tuned to a quiet host fails a command that is only slow: on a host other work keeps busy (load 7-9 on two
cores) ``make rehearse`` took over 400 s where it takes 74 s alone, and was killed while it was still making
progress. Here the command is killed only when it has stopped making progress: no new output, no file changed under
the folders it writes (``watch``) and no CPU time spent by its processes for ``stall_s`` (a slow host slows all
three; a hang, waiting on what never comes, shows none). ``limit_s`` stays a last bound far past any slow host's.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import psutil

STALL_S = 180.0  # no output, no file written, no CPU spent for this long: hung, on any host of this kind
CPU_SHARE = 0.1  # a core's share between two looks that counts as work done (a waiting process spends less)
LIMIT_S = 3600.0
# How often it looks for progress while the command is quiet: a stall is minutes, so seconds are fine. Each look
# walks the watched folders and reads every process on the host (psutil's children), CPU the test process takes from
# the command it guards on two cores.
POLL_S = 2.0


class Stalled(AssertionError):
    """The command made no progress for its stall time (killed, with what it had said)."""


def newest_change(folders: tuple[Path, ...]) -> float:
    """The latest modification time of a file or folder under ``folders`` (0 where none is there yet)."""
    newest = 0.0
    for top in folders:
        for root, dirs, files in os.walk(top):
            for name in (*dirs, *files):
                try:
                    newest = max(newest, os.stat(os.path.join(root, name)).st_mtime)
                except OSError:  # removed meanwhile
                    continue
    return newest


def cpu_s(pid: int) -> float:
    """CPU seconds spent so far by the process ``pid`` and every process below it (those that ended: their
    parents' children times)."""
    try:
        top = psutil.Process(pid)
        procs = [top, *top.children(recursive=True)]
    except psutil.Error:
        return 0.0
    spent = 0.0
    for p in procs:
        try:
            t = p.cpu_times()
            spent += t.user + t.system + t.children_user + t.children_system
        except psutil.Error:
            continue
    return spent


def ended(proc: subprocess.Popen, within_s: float) -> bool:
    """Whether ``proc`` ended within ``within_s`` (waiting no longer than it takes to end)."""
    try:
        proc.wait(timeout=within_s)
    except subprocess.TimeoutExpired:
        return False
    return True


def run(args: list[str], stall_s: float = STALL_S, watch: tuple[Path, ...] = (), limit_s: float = LIMIT_S,
        **popen: Any) -> subprocess.CompletedProcess[str]:
    """``args`` to its end (its output captured, as ``subprocess.run(capture_output=True, text=True)``), in a process
    group of its own that is killed, and :class:`Stalled` raised, once it has made no progress for ``stall_s``."""
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                            **popen)
    said: dict[str, list[str]] = {"out": [], "err": []}
    last = [time.monotonic()]

    def read(stream: Any, into: list[str]) -> None:
        for line in stream:
            into.append(line)
            last[0] = time.monotonic()

    readers = [threading.Thread(target=read, args=(s, said[k]), daemon=True)
               for s, k in ((proc.stdout, "out"), (proc.stderr, "err"))]
    for r in readers:
        r.start()
    started, seen, spent = time.monotonic(), newest_change(watch), 0.0
    poll_s = min(POLL_S, stall_s / 3)
    while not ended(proc, poll_s):
        if time.monotonic() - last[0] >= poll_s:  # quiet since the last look (output is progress enough)
            changed, used = newest_change(watch) if watch else 0.0, cpu_s(proc.pid)
            if changed > seen or used > spent + CPU_SHARE * poll_s:
                seen, spent, last[0] = max(seen, changed), max(spent, used), time.monotonic()
        quiet, total = time.monotonic() - last[0], time.monotonic() - started
        if quiet > stall_s or total > limit_s:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            for r in readers:
                r.join(timeout=10)
            why = f"no output, file or CPU time for {quiet:.0f} s" if quiet > stall_s else f"{total:.0f} s in all"
            raise Stalled(f"{' '.join(map(str, args[:6]))}: killed after {why}:\n"
                          + "".join(said["out"])[-3000:] + "".join(said["err"])[-3000:])
    for r in readers:
        r.join(timeout=30)
    return subprocess.CompletedProcess(args, proc.returncode, "".join(said["out"]), "".join(said["err"]))
