"""A preloaded guest: ``python -m suites.guest.zygote`` imports a workload's heavy libraries once and forks a
fresh guest process from itself for each guest the runner starts (the runner's side:
``suites/backends/forkserver.py``).

Every repeat of a comparison used to start ``python -m suites.guest`` anew and import torch in it: 2-3.5 s of
each repeat that no figure measured, paid again by every guest of every repeat of a GPU call. A forked guest is
still a new process (its own pid, process group, environment, cores, CUDA context, model and data: the repeats stay
independent measurements, as pyperf's worker processes are); only the imports are done. CUDA is never touched
here, so each guest initialises it after the fork with its own ``CUDA_VISIBLE_DEVICES``; a library that cannot be
forked once imported (TensorFlow's runtime) is never preloaded: its workloads are started as before.

The protocol with the runner, over a SOCK_SEQPACKET socket whose descriptor is its one argument: the runner sends
a JSON request ``{"preload": [...], "env": {...}, "cwd": "..."}`` with three descriptors (the guest's stdin, stdout
and log); the zygote answers ``{"pid": N}`` (or ``{"error": "..."}``), and ``{"exit": N, "code": C}`` once it
has reaped guest N (C as ``subprocess`` gives it: negative for a signal). A request with no descriptors is a
prewarm (``{"preload": [...]}``): the zygote imports them and answers nothing (one it cannot import is said at the
next guest's request, which imports it again). It dies with the runner
(PR_SET_PDEATHSIG) and each guest with it.
"""

from __future__ import annotations

import importlib
import io
import json
import os
import select
import signal
import socket
import sys
import traceback

from suites import process_gc
from suites.guest.__main__ import main as guest_main  # the guest's own modules, imported once for all
from suites.guest.setup import die_with_parent

MAX_REQUEST = 1 << 20  # a request's bytes: the guest's environment and its preloads


def main(fd: int) -> int:
    die_with_parent()
    sock = socket.socket(fileno=fd)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the runner stops it; a terminal's Ctrl-C is the runner's
    children: set[int] = set()
    while True:
        ready, _, _ = select.select([sock], [], [], 0.05)
        reap(sock, children)
        if not ready:
            continue
        try:
            data, fds, _, _ = socket.recv_fds(sock, MAX_REQUEST, 3)
        except OSError:
            return 0
        if not data:  # the runner closed its end: no more guests
            return 0
        answer(sock, data, fds, children)


def answer(sock: socket.socket, data: bytes, fds: list[int], children: set[int]) -> None:
    """One request: the preloads imported (once), a guest forked on the three descriptors; its pid said."""
    try:
        request = json.loads(data)
        if len(fds) not in (0, 3) or not isinstance(request, dict):
            raise ValueError(f"a request of {len(fds)} descriptor(s), {type(request).__name__}")
        with process_gc.loading():  # frozen before the fork: a guest neither walks nor copies what it inherits
            for module in request.get("preload", []):
                importlib.import_module(str(module))
        if not fds:  # the runner's prewarm: imported, nothing forked, nothing to answer
            return
        pid = os.fork()
    except Exception as exc:  # said to the runner, which then starts the guest as a process of its own
        for fd in fds:
            os.close(fd)
        if fds:  # a prewarm's is said at the next guest's request, which imports again: no answer nobody awaits
            sock.send(json.dumps({"error": f"{type(exc).__name__}: {exc}"}).encode())
        return
    if pid == 0:
        sock.close()
        os._exit(guest(fds, request))
    for fd in fds:
        os.close(fd)
    try:  # its own process group before the runner hears of it: a kill of the group never misses it
        os.setpgid(pid, pid)
    except OSError:
        pass  # it got there first
    children.add(pid)
    sock.send(json.dumps({"pid": pid}).encode())


def guest(fds: list[int], request: dict[str, object]) -> int:
    """The forked guest: its own process group, descriptors, environment and folder, then the guest's own main."""
    try:
        os.setpgid(0, 0)  # a group of its own, which the runner's kill ends (the zygote has no terminal to leave)
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGCHLD):
            signal.signal(sig, signal.SIG_DFL)
        os.environ.clear()
        os.environ.update({str(k): str(v) for k, v in dict(request.get("env") or {}).items()})  # type: ignore[call-overload]
        os.chdir(str(request.get("cwd") or "."))
        sys.stdin = io.TextIOWrapper(io.FileIO(0, "r", closefd=False))
        sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), line_buffering=True)
        sys.stderr = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), line_buffering=True)
        code = guest_main()
    except BaseException:
        traceback.print_exc()
        code = 1
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    return code


def reap(sock: socket.socket, children: set[int]) -> None:
    """Each guest that has exited, reaped and its exit code said."""
    for pid in list(children):
        try:
            done, status = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            children.discard(pid)
            continue
        if done:
            children.discard(pid)
            try:
                sock.send(json.dumps({"exit": pid, "code": os.waitstatus_to_exitcode(status)}).encode())
            except OSError:
                pass


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1])))
