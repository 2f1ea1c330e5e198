"""Ctrl-C while a run is already stopping or recording: noted, said, never allowed to lose the record, never forgotten.

The first Ctrl-C (or SIGTERM) stops the guests; a second one, pressed while
the guests are being stopped or the results written, would end the runner
with a ``KeyboardInterrupt`` traceback and no table or MLflow run. Inside a
:class:`Shield` those signals only print one line; ``give_up`` presses in a
row end the shielded work after all (a store that hangs must not trap the
user), as :class:`Interrupted` the caller turns into a message. Whatever is
written before the shield (the run directory's ``results.json``) is safe either
way.

A signal a shield noted is **owed**, not dropped: the handler :func:`stop_on_signals` installed keeps it (its
``noted``) once the shield is down, and the command stops at the first point where stopping loses nothing, the
part's results recorded (:func:`honour`: the phase loop, a comparison's record, the campaign executor between parts,
a sweep, compare's record, and :mod:`suites.commands` as the last). Where no such handler is installed (a library
use), the shield delivers the signal again as it comes down, to whatever handler was there before it.
"""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Callable
from types import FrameType, TracebackType
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
    """The handler :func:`stop_on_signals` installs: raises :class:`Interrupted`, and remembers the signal (``last``).
    A library may catch the exception and raise a bare ``KeyboardInterrupt`` instead: Ray's C++ wait loops do (its
    ``check_signals`` turns any KeyboardInterrupt into a status, and that into a new one), so a SIGTERM that lands in
    ``ray.wait`` would otherwise be recorded as Ctrl-C. ``noted``: a signal a :class:`Shield` held off and no one has
    honoured yet."""

    def __init__(self) -> None:
        self.last: int | None = None
        self.noted: int | None = None

    def __call__(self, signum: int, frame: FrameType | None) -> None:
        self.last = signum
        raise Interrupted(signum)


def installed() -> StopOnSignal | None:
    """The process's :class:`StopOnSignal`, whether or not a :class:`Shield` stands in front of it now."""
    handler = signal.getsignal(signal.SIGTERM)
    while isinstance(getattr(handler, "__self__", None), Shield):  # a shield's bound _on_signal
        handler = handler.__self__._saved.get(signal.SIGTERM)  # type: ignore[union-attr]
    return handler if isinstance(handler, StopOnSignal) else None


def reason(signum: int | None) -> str:
    """'interrupted (Ctrl-C)', or the signal's own name in words."""
    return f"interrupted ({STOPPED_BY.get(signal.Signals(signum), 'Ctrl-C') if signum else 'Ctrl-C'})"


def interrupt_reason(exc: BaseException | None = None) -> str:
    """'interrupted (Ctrl-C)', or the signal that did it: the exception's own, else the last one the installed
    :class:`StopOnSignal` raised for or had noted."""
    handler = installed()
    return reason(exc.signum if isinstance(exc, Interrupted) else getattr(handler, "last", None))


def noted() -> int | None:
    """The signal a shield noted that the command has not honoured yet (None: none)."""
    handler = installed()
    return handler.noted if handler is not None else None


def honour() -> int | None:
    """The owed signal, taken: the caller stops now (no next phase, part, point or check), ends its run KILLED with
    :func:`reason` and exits 130. None: nothing owed."""
    handler = installed()
    signum = handler.noted if handler is not None else None
    if handler is not None:
        handler.noted = None
    return signum


def stop_on_signals() -> None:
    """Ctrl-C, SIGTERM (scancel, a service manager) and SIGHUP stop the run and record it, naming the signal (main
    thread only). Installed once a process: a second call keeps the first handler and what it noted."""
    if threading.current_thread() is threading.main_thread() and installed() is None:
        handler = StopOnSignal()
        for s in SIGNALS:
            signal.signal(s, handler)


class Shield:
    """Signals held off while ``doing`` (said in one line each); then owed to the command (:func:`honour`)."""

    def __init__(self, say: Callable[[str], None], doing: str, give_up: int | None = 3) -> None:
        self.say, self.doing, self.give_up = say, doing, give_up
        self.presses = 0
        self.signum: int | None = None
        self._saved: dict[int, Any] = {}

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        self.presses += 1
        self.signum = signum
        handler = installed()
        if handler is not None:  # owed from now on, whatever happens to this shield
            handler.last = handler.noted = signum
        if self.give_up is None:  # work that must finish (stopping guests: none may be left running)
            self.say(f"interrupt noted: {self.doing} first")
            return
        if self.presses >= self.give_up:
            self.say(f"interrupt: {self.presses} times; giving up {self.doing}")
            if handler is not None:
                handler.noted = None  # raised now: not owed twice
            raise Interrupted(signum)
        left = self.give_up - self.presses
        self.say(f"interrupt noted: {self.doing} first (Ctrl-C {left} more time(s) to give that up)")

    def __enter__(self) -> Shield:
        if threading.current_thread() is threading.main_thread():  # signals are the main thread's only
            for s in SIGNALS:
                self._saved[s] = signal.signal(s, self._on_signal)
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        for s, handler in self._saved.items():
            signal.signal(s, handler)
        self._saved.clear()
        if self.signum is not None and exc_type is None and installed() is None:  # no one to owe it to: delivered now
            signum, self.signum = self.signum, None
            sys.stderr.flush()
            signal.raise_signal(signum)
