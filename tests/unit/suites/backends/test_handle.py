"""Tests of ``suites/backends/handle.py``'s state machine through a pipe of its own (the Pipe protocol, as the Ray
backend gives it one): ready -> go -> running -> result; a guest that exits without a result fails with why; an
open-ended guest is told to stop once; an error event fails it."""

from __future__ import annotations

from pathlib import Path

from suites.backends.handle import GuestHandle, exit_reason
from suites.guest.protocol import GO, STOP, GuestSpec


class Pipe:
    """A guest process as the handle sees it: lines sent, events to drain, an exit code, a log tail."""

    def __init__(self) -> None:
        self.pid, self.sent, self.events, self.code, self.killed = 4242, [], [], None, False

    def send(self, line: str) -> None:
        self.sent.append(line)

    def drain(self) -> list[dict]:
        out, self.events = self.events, []
        return out

    def returncode(self) -> int | None:
        return self.code

    def log_tail(self) -> str:
        return "Traceback: boom"

    def rss_MiB(self) -> float:
        return 12.0

    def kill(self) -> None:
        self.killed = True


def handle(config: dict | None = None) -> tuple[GuestHandle, Pipe]:
    pipe = Pipe()
    spec = GuestSpec("g0", "m60-2q", "fixed-step", config or {}, {}, [], [], None, 2048)
    return GuestHandle(spec, Path("g0.log"), pipe), pipe


def test_a_guest_goes_ready_running_and_done_on_its_events():
    h, pipe = handle()
    h.release()
    assert pipe.sent == [] and h.state == "starting"  # not ready: no go yet
    mine = {"nonce": h.spec.nonce}
    assert len(h.spec.nonce) == 16  # given by the handle, sent in the spec
    pipe.events = [{"event": "ready", "setup_time_s": 1.5, **mine}, {"event": "progress", "done": 3, "total": 10,
                                                                      **mine}]
    h.pump()
    assert h.state == "ready" and h.setup_time_s == 1.5 and (h.done_steps, h.total_steps) == (3, 10)
    h.release()
    assert h.state == "running" and pipe.sent == [GO]
    forged = {"event": "result", "result": {"guest_id": "g0", "status": "ok", "metrics": {"images": 1e9}}}
    pipe.events = [forged, {**forged, "nonce": "0" * 16}]  # printed before the guest took its stdout: not its own
    h.pump()
    assert h.state == "running" and h.result is None
    pipe.events = [{"event": "result", "result": {"guest_id": "g0", "status": "ok", "metrics": {"images": 5.0}},
                    **mine}]
    h.pump()
    assert h.finished and h.final_result().metrics == {"images": 5.0} and h.rss_MiB() == 12.0


def test_a_guest_that_exits_without_a_result_fails_with_its_exit_and_log_tail():
    h, pipe = handle()
    pipe.code = -9
    h.pump()
    assert h.state == "failed" and h.error == "killed by SIGKILL (Traceback: boom)"
    assert h.final_result().status == "failed" and h.final_result().pid == 4242
    assert exit_reason(3, "") == "exited with code 3 before reporting"


def test_an_open_ended_guest_is_told_to_stop_once_and_an_error_event_fails_a_guest():
    h, pipe = handle({"until_stopped": True})
    assert h.open_ended
    pipe.events = [{"event": "ready", "nonce": h.spec.nonce}]
    h.pump()
    h.release()
    h.stop()
    h.stop()
    assert pipe.sent == [GO, STOP]
    pipe.events = [{"event": "error", "error": "framebuffer cap exceeded"}]
    h.pump()
    assert h.state == "failed" and h.error == "framebuffer cap exceeded"
    h.kill("timeout")
    assert pipe.killed and h.error == "framebuffer cap exceeded"  # the first reason stays
