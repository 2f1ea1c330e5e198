"""Ctrl-C while a run is already stopping or recording: noted, said, and not allowed to lose the record.

The first Ctrl-C (or SIGTERM) stops the guests; a second one, pressed while
the guests are being stopped or the results written, would end the runner
with a ``KeyboardInterrupt`` traceback and no table or MLflow run. Inside a
:class:`Shield` those signals only print one line; ``give_up`` presses in a
row end the shielded work after all (a store that hangs must not trap the
user), as a ``KeyboardInterrupt`` the caller turns into a message. Whatever is
written before the shield (the run directory's ``results.json``) is safe either
way.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable
from types import FrameType
from typing import Any

SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
# What each signal that stops a run is said to be, in the guests' recorded reason. SIGHUP is a dropped terminal or
# ssh session: unhandled, it would end the runner with nothing recorded.
STOPPED_BY = {signal.SIGINT: "Ctrl-C", signal.SIGTERM: "SIGTERM",
              signal.SIGHUP: "SIGHUP: the terminal or ssh session hung up"}


class Interrupted(KeyboardInterrupt):
    """A signal that stops a run as Ctrl-C does (guests stopped, what was measured recorded), naming itself."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


class StopOnSignal:
    """The handler :func:`stop_on_signals` installs: raises :class:`Interrupted`, and remembers the signal. A library
    may catch the exception and raise a bare ``KeyboardInterrupt`` instead: Ray's C++ wait loops do (its
    ``check_signals`` turns any KeyboardInterrupt into a status, and that into a new one), so a SIGTERM that lands in
    ``ray.wait`` would otherwise be recorded as Ctrl-C."""

    def __init__(self) -> None:
        self.last: int | None = None

    def __call__(self, signum: int, frame: FrameType | None) -> None:
        self.last = signum
        raise Interrupted(signum)


def interrupt_reason(exc: BaseException | None = None) -> str:
    """'interrupted (Ctrl-C)', or the signal that did it: the exception's own, else the last one the installed
    :class:`StopOnSignal` raised for (read it before a :class:`Shield` replaces the handlers)."""
    handler = signal.getsignal(signal.SIGTERM)
    signum = exc.signum if isinstance(exc, Interrupted) else getattr(handler, "last", None)
    return f"interrupted ({STOPPED_BY.get(signal.Signals(signum), 'Ctrl-C') if signum else 'Ctrl-C'})"


def stop_on_signals() -> None:
    """Ctrl-C, SIGTERM (scancel, a service manager) and SIGHUP stop the run and record it, naming the signal (main
    thread only)."""
    if threading.current_thread() is threading.main_thread():
        handler = StopOnSignal()
        for s in SIGNALS:
            signal.signal(s, handler)


class Shield:
    def __init__(self, say: Callable[[str], None], doing: str, give_up: int | None = 3) -> None:
        self.say, self.doing, self.give_up = say, doing, give_up
        self.presses = 0
        self._saved: dict[int, Any] = {}

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        self.presses += 1
        outside = self._saved.get(signum)
        if isinstance(outside, StopOnSignal):  # what interrupt_reason reads once the shield is down
            outside.last = signum
        if self.give_up is None:  # work that must finish (stopping guests: none may be left running)
            self.say(f"interrupt noted: {self.doing} first")
            return
        if self.presses >= self.give_up:
            self.say(f"interrupt: {self.presses} times; giving up {self.doing}")
            raise KeyboardInterrupt
        left = self.give_up - self.presses
        self.say(f"interrupt noted: {self.doing} first (Ctrl-C {left} more time(s) to give that up)")

    def __enter__(self) -> Shield:
        if threading.current_thread() is threading.main_thread():  # signals are the main thread's only
            for s in SIGNALS:
                self._saved[s] = signal.signal(s, self._on_signal)
        return self

    def __exit__(self, *exc: object) -> None:
        for s, handler in self._saved.items():
            signal.signal(s, handler)
        self._saved.clear()
