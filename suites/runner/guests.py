"""Local guest processes: start, barrier, events, and a kill that leaves no orphan.

Each guest runs in its own process session (so Ctrl-C at the terminal reaches
only the runner, which then stops the guests on purpose) and is killed as a
whole process group. Guests also die with the runner (PR_SET_PDEATHSIG).
"""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import psutil

from gpu_probe import vocab
from suites.guest.protocol import ABORT, GO, GuestResult, GuestSpec, parse_event

REPO_ROOT = Path(__file__).resolve().parents[2]


class GuestProcess:
    """One guest seen from the runner: state machine fed by protocol events."""

    def __init__(self, spec: GuestSpec, log_path: Path) -> None:
        self.spec = spec
        self.id = spec.guest_id
        self.log_path = log_path
        self.state = "starting"  # starting -> ready -> running -> done | failed
        self.result: GuestResult | None = None
        self.error: str | None = None
        self.done_steps = 0
        self.total_steps = 0
        self.setup_time_s: float | None = None
        self.proc: subprocess.Popen[str] | None = None
        self._events: queue.Queue[dict[str, Any]] = queue.Queue()

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    @property
    def finished(self) -> bool:
        return self.state in ("done", "failed")

    def start(self) -> None:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
        log = self.log_path.open("w")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "suites.guest"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=log, text=True, bufsize=1, start_new_session=True, cwd=REPO_ROOT, env=env)
        log.close()  # the child holds its own copy
        self._send(self.spec.to_line())
        threading.Thread(target=self._read, name=f"guest-{self.id}-reader", daemon=True).start()

    def _send(self, line: str) -> None:
        try:
            assert self.proc is not None and self.proc.stdin is not None
            self.proc.stdin.write(line if line.endswith("\n") else line + "\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError, ValueError):
            pass  # the guest is gone; poll() will tell why

    def _read(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        for line in self.proc.stdout:
            ev = parse_event(line)
            if ev is not None:
                self._events.put(ev)

    def release(self) -> None:
        if self.state == "ready":
            self.state = "running"
            self._send(GO)

    def abort(self) -> None:
        self._send(ABORT)

    def pump(self) -> None:
        """Apply queued events, then notice an exit that sent no result."""
        while True:
            try:
                ev = self._events.get_nowait()
            except queue.Empty:
                break
            self._apply(ev)
        if not self.finished and self.proc is not None and self.proc.poll() is not None:
            time.sleep(0.05)  # let the reader hand over a final line written just before exit
            while not self._events.empty():
                self._apply(self._events.get_nowait())
            if not self.finished:
                self.fail(self.error or exit_reason(self.proc.returncode, self.log_path))

    def _apply(self, ev: dict[str, Any]) -> None:
        kind = ev["event"]
        if kind == "ready":
            self.state, self.setup_time_s = "ready", ev.get("setup_time_s")
        elif kind == "progress":
            self.done_steps, self.total_steps = int(ev["done"]), int(ev["total"])
        elif kind == "result":
            self.result = GuestResult(**ev["result"])
            self.state = "done" if self.result.ok else "failed"
            self.error = self.result.error
        elif kind == "error":
            self.fail(str(ev.get("error")))

    def fail(self, reason: str) -> None:
        if not self.finished:
            self.state, self.error = "failed", reason

    def kill(self, reason: str) -> None:
        """SIGKILL the guest's whole process group and record why."""
        self.fail(reason)
        self.terminate()

    def terminate(self) -> None:
        if self.proc is None:
            return
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        for stream in (self.proc.stdin, self.proc.stdout):
            try:
                if stream:
                    stream.close()
            except OSError:
                pass

    def rss_MiB(self) -> float:
        try:
            root = psutil.Process(self.pid)
            procs = [root, *root.children(recursive=True)]
            return sum(p.memory_info().rss for p in procs) / vocab.MiB
        except psutil.Error:
            return 0.0

    def final_result(self) -> GuestResult:
        if self.result is not None and self.result.ok:
            return self.result
        return GuestResult(self.id, "failed", error=self.error or "no result",
                           pid=self.proc.pid if self.proc else None)


def exit_reason(returncode: int | None, log_path: Path) -> str:
    if returncode is not None and returncode < 0:
        reason = f"killed by {signal.Signals(-returncode).name}"
    else:
        reason = f"exited with code {returncode} before reporting"
    tail = last_line(log_path)
    return f"{reason} ({tail})" if tail else reason


def last_line(path: Path) -> str:
    try:
        lines = [ln.strip() for ln in path.read_text(errors="replace").splitlines() if ln.strip()]
    except OSError:
        return ""
    return lines[-1][:200] if lines else ""
