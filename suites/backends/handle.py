"""Guests seen from the runner: a protocol state machine over a pipe to the guest process.

:class:`GuestPipe` is the guest process on *this* host: its own process
session (so Ctrl-C at the terminal reaches only the runner, which then stops
the guests on purpose), killed as a whole process group, and dying with its
parent (PR_SET_PDEATHSIG in the guest). :class:`GuestHandle` only reads
protocol events and decides state; the Ray backend gives it a pipe to a guest
on another node (:mod:`suites.backends.ray.cluster`), with the same protocol lines.
"""

from __future__ import annotations

import os
import queue
import secrets
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any, Protocol

import psutil

from gpu_probe import vocab
from gpu_probe.remote import RemoteUsage, node_columns
from gpu_probe.shapes import JsonObject
from suites.backends.forkserver import Forked, ForkServer
from suites.guest.protocol import GO, STOP, GuestResult, GuestSpec, from_the_guest, parse_event
from suites.guest.setup import environment
from suites.workloads import workload_class

REPO_ROOT = Path(__file__).resolve().parents[2]


class Pipe(Protocol):
    """What the state machine needs from a guest process, wherever it runs."""

    pid: int | None

    def send(self, line: str) -> None: ...
    def drain(self) -> list[JsonObject]: ...
    def returncode(self) -> int | None: ...
    def log_tail(self) -> str: ...
    def rss_MiB(self) -> float: ...
    def kill(self) -> None: ...


class Watcher(Protocol):
    """What a guest needs from the run's sampler: to be followed (its process tree's CPU, memory, GPU use)."""

    def watch(self, guest_id: str, pid: int) -> None: ...

    def join_rows(self, guest_id: str, source: RemoteUsage) -> None: ...


def preload_of(workload: str) -> list[str] | None:
    """What a guest of ``workload`` forked from the comparison's preloaded process has imported there (its
    declared preloads and its own module); None where it may not be forked (suites/workloads/base.py)."""
    plugin = workload_class(workload)
    return None if plugin.preload is None else [*plugin.preload, plugin.__module__]


class GuestPipe:
    """``python -m suites.guest`` on this host: spec on stdin, events from stdout, stderr to a log."""

    def __init__(self, log_path: Path, forks: ForkServer | None = None) -> None:
        self.log_path = log_path
        self.forks = forks  # a comparison's preloaded guest, for a workload that may be forked from it
        self.pid: int | None = None
        self.proc: subprocess.Popen[str] | Forked | None = None
        self.group: int | None = None  # the process group kill() ends
        self._events: queue.Queue[JsonObject] = queue.Queue()
        self._lines: list[str] = []  # raw protocol lines, for a relay that forwards them elsewhere
        self._reader: threading.Thread | None = None

    def start(self, spec: GuestSpec, keep_lines: bool = False) -> int:
        env = {**os.environ, **environment(spec)}  # threads and GPUs are the guest's before any library loads
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
        self.proc = self._forked(spec, env) or self._spawned(env)
        self.pid = self.group = self.proc.pid  # its own session: a process group of its own
        self.send(spec.to_line())
        self.start_reader(f"guest-{spec.guest_id}-reader", keep_lines)
        return self.pid

    def _spawned(self, env: dict[str, str]) -> subprocess.Popen[str]:
        """``python -m suites.guest``, a process of its own in a session of its own."""
        with self.log_path.open("w") as log:  # the child holds its own copy
            return subprocess.Popen([sys.executable, "-m", "suites.guest"], stdin=subprocess.PIPE,
                                    stdout=subprocess.PIPE, stderr=log, text=True, bufsize=1, start_new_session=True,
                                    cwd=REPO_ROOT, env=env)

    def _forked(self, spec: GuestSpec, env: dict[str, str]) -> Forked | None:
        """The guest forked from the comparison's preloaded process, where its workload may be (None: not)."""
        if self.forks is None:
            return None
        modules = preload_of(spec.workload)
        if modules is None:
            return None
        return self.forks.spawn(env, modules, self.log_path)

    def start_reader(self, name: str, keep_lines: bool) -> None:
        self._reader = threading.Thread(target=self._read, args=(keep_lines,), name=name, daemon=True)
        self._reader.start()

    def processes(self) -> list[subprocess.Popen[Any] | Forked]:
        """What kill() waits for once the group is killed."""
        return [self.proc] if self.proc is not None else []

    def send(self, line: str) -> None:
        try:
            assert self.proc is not None and self.proc.stdin is not None
            self.proc.stdin.write(line if line.endswith("\n") else line + "\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError, ValueError, AssertionError):
            pass  # the guest is gone; returncode() will tell why

    def _read(self, keep_lines: bool) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        try:
            for line in self.proc.stdout:
                ev = parse_event(line)
                if ev is not None and self.forward(ev):
                    self._events.put(ev)
                    if keep_lines:
                        self._lines.append(line)
        except (ValueError, OSError):
            pass  # kill() closed the stream under it: the reader outlived kill()'s join (a pipe held open, a slow host)

    def forward(self, ev: JsonObject) -> bool:
        """Whether an event read from the guest goes on to the runner (a pipe may answer some itself)."""
        return True

    def drain(self) -> list[JsonObject]:
        out = []
        while True:
            try:
                out.append(self._events.get_nowait())
            except queue.Empty:
                return out

    def drain_lines(self) -> list[str]:
        lines, self._lines = self._lines, []
        return lines

    def returncode(self) -> int | None:
        """The exit status once the guest has exited *and* its last protocol line has been read."""
        if self.proc is None or self.proc.poll() is None:
            return None
        if self._reader is not None:
            self._reader.join(timeout=0.5)  # a result written just before exit is not lost
        return self.proc.returncode

    def log_tail(self) -> str:
        return last_line(self.log_path)

    def rss_MiB(self) -> float:
        if self.pid is None:
            return 0.0
        try:
            root = psutil.Process(self.pid)
            procs = [root, *root.children(recursive=True)]
            return sum(p.memory_info().rss for p in procs) / vocab.MiB
        except psutil.Error:
            return 0.0

    def kill(self) -> None:
        """SIGKILL the guest's whole process group (idempotent)."""
        if self.group is None:
            return
        try:
            os.killpg(self.group, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        for proc in self.processes():
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
        if self._reader is not None and self._reader is not threading.current_thread():
            self._reader.join(timeout=1.0)  # the group is gone: its reader reads to the pipe's end before it is closed
        for stream in (self.proc.stdin, self.proc.stdout) if self.proc is not None else ():
            try:
                if stream:
                    stream.close()
            except OSError:
                pass


class GuestHandle:
    """One guest seen from the runner: state machine fed by protocol events."""

    def __init__(self, spec: GuestSpec, log_path: Path, pipe: Pipe | None = None) -> None:
        spec.nonce = spec.nonce or secrets.token_hex(8)  # what its events must carry back (protocol.from_the_guest)
        self.spec = spec
        self.id = spec.guest_id
        self.log_path = log_path
        self.pipe: Pipe = pipe if pipe is not None else GuestPipe(log_path)
        self.state = "starting"  # starting -> ready -> running -> done | failed
        self.result: GuestResult | None = None
        self.error: str | None = None
        self.done_steps = 0
        self.total_steps = 0
        self.setup_time_s: float | None = None
        self.samples = RemoteUsage()  # what a guest's VM sampled of its own GPU (the "samples" event)
        self.open_ended = bool(spec.workload_config.get("until_stopped"))  # trains until told to stop
        self.told_to_stop = False

    @property
    def pid(self) -> int | None:
        return self.pipe.pid

    @property
    def finished(self) -> bool:
        return self.state in ("done", "failed")

    def start(self) -> None:
        assert isinstance(self.pipe, GuestPipe)
        self.pipe.start(self.spec)

    def watch(self, sampler: Watcher) -> None:
        """Have the sampler follow this guest's processes."""
        if self.pid is not None:
            sampler.watch(self.id, self.pid)
        sampler.join_rows(self.id, self.samples)

    def release(self) -> None:
        if self.state == "ready":
            self.state = "running"
            self.pipe.send(GO)

    def stop(self) -> None:
        """Tell an open-ended guest its peers have finished (once)."""
        if self.state == "running" and not self.told_to_stop:
            self.told_to_stop = True
            self.pipe.send(STOP)

    def pump(self) -> None:
        """Apply arrived events, then notice an exit that sent no result."""
        for ev in self.pipe.drain():
            self._apply(ev)
        if self.finished:
            return
        code = self.pipe.returncode()
        if code is not None:
            for ev in self.pipe.drain():  # read up to the exit
                self._apply(ev)
            if not self.finished:
                self.fail(self.error or exit_reason(code, self.pipe.log_tail()))

    def _apply(self, ev: JsonObject) -> None:
        if not from_the_guest(ev, self.spec.nonce):  # printed before the guest took over its stdout: not its own
            return
        event = ev["event"]
        if event == "ready":
            self.state, self.setup_time_s = "ready", ev.get("setup_time_s")
        elif event == "progress":
            self.done_steps, self.total_steps = int(ev["done"]), int(ev["total"])
        elif event == "result":
            self.result = GuestResult(**ev["result"])
            self.state = "done" if self.result.ok else "failed"
            self.error = self.result.error
        elif event == "samples":  # rows the guest's VM took of its own GPU: its columns under this guest's id
            node = dict(ev.get("samples") or {})
            self.samples.add_rows([{"t": r["t"], **node_columns(r, self.id)} for r in node.pop("rows", [])], 0.0)
            self.samples.node = node
        elif event == "error":
            self.fail(str(ev.get("error")))

    def fail(self, reason: str) -> None:
        if not self.finished:
            self.state, self.error = "failed", reason

    def kill(self, reason: str) -> None:
        """Kill the guest's processes and record why."""
        self.fail(reason)
        self.terminate()

    def terminate(self) -> None:
        self.pipe.kill()

    def rss_MiB(self) -> float:
        return self.pipe.rss_MiB()

    def final_result(self) -> GuestResult:
        if self.result is not None and self.result.ok:
            return self.result
        return GuestResult(self.id, "failed", error=self.error or "no result", pid=self.pid)


def exit_reason(returncode: int | None, tail: str) -> str:
    if returncode is not None and returncode < 0:
        reason = f"killed by {signal.Signals(-returncode).name}"
    else:
        reason = f"exited with code {returncode} before reporting"
    return f"{reason} ({tail})" if tail else reason


def last_line(path: Path) -> str:
    try:
        lines = [ln.strip() for ln in path.read_text(errors="replace").splitlines() if ln.strip()]
    except OSError:
        return ""
    return lines[-1][:200] if lines else ""
