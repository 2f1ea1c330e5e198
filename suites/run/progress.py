"""Per-guest progress: a live rich view on a terminal, sparse log lines in CI."""

from __future__ import annotations

import sys
import time
from typing import Any

from gpu_probe.shapes import JsonObject
from suites.backends.handle import GuestHandle


class ProgressView:
    def __init__(self, mode: str, log_every_s: float = 8.0, start_timeout_s: float = 0.0) -> None:
        # a line at least every 10 s (make size); a guest still setting up says how long of its start_timeout_s
        self.start_timeout_s, self.t0 = start_timeout_s, time.monotonic()
        self.live = mode == "live" or (mode == "auto" and sys.stderr.isatty())
        self.quiet = mode == "quiet"
        self.log_every_s = log_every_s
        self._last_log = 0.0
        self._tasks: JsonObject = {}
        self._progress: Any = None

    def __enter__(self) -> "ProgressView":
        if self.live:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

            self._progress = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                      TextColumn("{task.fields[state]}"), TimeElapsedColumn(), transient=False)
            self._progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._progress is not None:
            self._progress.stop()

    def update(self, guests: list[GuestHandle]) -> None:
        if self._progress is not None:
            for g in guests:
                if g.id not in self._tasks:
                    label = f"{g.id} {g.spec.workload} [{g.spec.profile}]"
                    self._tasks[g.id] = self._progress.add_task(label, total=None, state=g.state)
                self._progress.update(self._tasks[g.id], completed=g.done_steps,
                                      total=g.total_steps or None, state=g.state)
            return
        now = time.monotonic()
        if self.quiet or now - self._last_log < self.log_every_s:
            return
        self._last_log = now
        parts = [f"{g.id} {g.state} {g.done_steps}/{g.total_steps or '?'}" for g in guests]
        print("progress: " + " | ".join(parts) + self.setting_up(guests), file=sys.stderr, flush=True)

    def setting_up(self, guests: list[GuestHandle]) -> str:
        """' (set-up 45 s of scenario.start_timeout_s=300)', once, while a guest is not yet at the start barrier: a
        guest that never becomes ready is seen to be waited for, and until when."""
        if not self.start_timeout_s or not any(g.state == "starting" for g in guests):
            return ""
        return f" (set-up {time.monotonic() - self.t0:.0f} s of scenario.start_timeout_s={self.start_timeout_s:g})"
