"""The runner's side of the preloaded guest (``suites/guest/zygote.py``): one zygote per comparison, started at
its first guest that can be forked (a comparison's command starts it earlier, while it opens its store:
:meth:`ForkServer.prewarm`), asked for each guest of each repeat, stopped with the comparison.

What it hands back is a :class:`Forked`, which a :class:`~suites.backends.handle.GuestPipe` uses as it would a
``subprocess.Popen``: its pid (a session and process group of its own, which ``kill`` ends), its stdin and stdout,
``poll``/``wait`` and ``returncode`` (the zygote reaps the guest and says its exit code). Where the zygote cannot
be had (it failed to start, or said why it could not fork), that guest and every later one are started as
processes of their own, as before; ``failed`` keeps why.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

__all__ = ["ForkServer", "Forked"]

REPO_ROOT = Path(__file__).resolve().parents[2]
ANSWER_S = 60.0  # how long a request waits for its pid: the first one imports the preloads (torch: seconds)


class Forked:
    """A guest forked by the zygote, seen as ``subprocess.Popen`` sees a child."""

    def __init__(self, pid: int, stdin: io.TextIOWrapper, stdout: io.TextIOWrapper, server: ForkServer) -> None:
        self.pid, self.stdin, self.stdout, self._server = pid, stdin, stdout, server
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            self.returncode = self._server.exit_code(self.pid)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if deadline is not None and time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(f"guest {self.pid}", timeout or 0.0)
            time.sleep(0.01)
        assert self.returncode is not None
        return self.returncode


class ForkServer:
    """One zygote process and the guests it forked; ``close`` stops it (its guests, already stopped, are reaped)."""

    def __init__(self) -> None:
        self.proc: subprocess.Popen[bytes] | None = None
        self.sock: socket.socket | None = None
        self.failed = ""  # why it could not be had: guests are then started on their own
        self._exits: dict[int, int] = {}
        self._answers: list[dict[str, object]] = []
        self._cond = threading.Condition()
        self._lock = threading.Lock()  # one request at a time
        self._watch: Callable[[int], None] | None = None

    def watched_by(self, watch: Callable[[int], None] | None) -> None:
        """Tell ``watch`` the zygote's pid, now if it runs, else as it starts: its CPU (its imports, its forks) is
        the run's own, never another process's load (a run's sampler; None: no run samples it now)."""
        self._watch = watch
        if watch is not None and self.proc is not None and self.proc.poll() is None:
            watch(self.proc.pid)

    def spawn(self, env: dict[str, str], preload: list[str], log_path: Path) -> Forked | None:
        """A guest forked with ``env`` after ``preload`` was imported, its stderr into ``log_path``; None where the
        zygote cannot give one (``failed`` says why)."""
        if self.failed or (self.proc is None and not self._start()):
            return None
        stdin_r, stdin_w = os.pipe()
        stdout_r, stdout_w = os.pipe()
        log_fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        request = json.dumps({"preload": preload, "env": env, "cwd": str(REPO_ROOT)}).encode()
        try:
            with self._lock:
                assert self.sock is not None
                socket.send_fds(self.sock, [request], [stdin_r, stdout_w, log_fd])
                answer = self._answer()
        except (OSError, TimeoutError) as exc:
            answer = {"error": f"{type(exc).__name__}: {exc}"}
        finally:
            for fd in (stdin_r, stdout_w, log_fd):
                os.close(fd)
        if "pid" not in answer:
            self.failed = str(answer.get("error") or "no answer")
            os.close(stdin_w)
            os.close(stdout_r)
            return None
        stdin = io.TextIOWrapper(io.FileIO(stdin_w, "w"), line_buffering=True)
        stdout = io.TextIOWrapper(io.FileIO(stdout_r, "r"))
        return Forked(int(answer["pid"]), stdin, stdout, self)  # type: ignore[call-overload]

    def prewarm(self, preload: list[str]) -> None:
        """The zygote started now and told to import ``preload`` (a request with no descriptors: nothing is forked
        or answered), while the command does its own start (its store's opening: MLflow's import beside torch's, on
        another core); the first guest is then forked at once. Where it cannot start, ``failed`` says why."""
        if self.failed or (self.proc is None and not self._start()):
            return
        try:
            with self._lock:
                assert self.sock is not None
                self.sock.send(json.dumps({"preload": preload}).encode())
        except OSError as exc:
            self.failed = f"the zygote could not be told its preloads ({exc})"

    def exit_code(self, pid: int) -> int | None:
        with self._cond:
            code = self._exits.get(pid)
        if code is None and self.proc is not None and self.proc.poll() is not None and not alive(pid):
            return -9  # the zygote is gone (and took its guests with it): as a SIGKILL
        return code

    def close(self) -> None:
        if self.proc is None:
            return
        if self.sock is not None:  # the zygote ends when its end reads nothing more: shut down first, for the
            with contextlib.suppress(OSError):  # listener's recv blocked on it keeps a closed socket open (EOF
                self.sock.shutdown(socket.SHUT_RDWR)  # then never reached the zygote, killed 5 s later)
            self.sock.close()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def _start(self) -> bool:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO_ROOT),
                                                                          os.environ.get("PYTHONPATH")]))}
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "suites.guest.zygote", str(theirs.fileno())], stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True, cwd=REPO_ROOT,
                env=env, pass_fds=(theirs.fileno(),))
        except OSError as exc:
            self.failed = f"the zygote could not start ({exc})"
            ours.close()
            return False
        finally:
            theirs.close()
        if self._watch is not None:  # before it imports anything: that is the run's CPU
            self._watch(self.proc.pid)
        self.sock = ours
        threading.Thread(target=self._listen, name="zygote-listener", daemon=True).start()
        return True

    def _listen(self) -> None:
        assert self.sock is not None
        while True:
            try:
                data = self.sock.recv(1 << 16)
            except OSError:
                data = b""
            if not data:
                with self._cond:
                    self._answers.append({"error": "the zygote ended"})
                    self._cond.notify_all()
                return
            msg = json.loads(data)
            with self._cond:
                if "exit" in msg:
                    self._exits[int(msg["exit"])] = int(msg["code"])
                else:
                    self._answers.append(msg)
                self._cond.notify_all()

    def _answer(self) -> dict[str, object]:
        with self._cond:
            if not self._cond.wait_for(lambda: bool(self._answers), timeout=ANSWER_S):
                raise TimeoutError(f"the zygote gave no pid within {ANSWER_S:g} s")
            return self._answers.pop(0)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
