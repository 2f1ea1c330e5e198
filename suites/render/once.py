"""Notes said once: a long command (a sizing's parts, each placed again while it waits for cores, each phase looking
at the host) repeats the same note tens or hundreds of times. A note (a line starting ``note:``, ``consolidation:``
or ``warning:``) is printed the first time; a repeat is counted, not printed (its folded continuation lines with
it), and :meth:`SaidOnce.summary` gives each repeated note once more with its count. Other lines (progress, tables,
each phase's own figures) always print."""

from __future__ import annotations

import re
from typing import Any, TextIO

from rich.console import Console

from suites.render.tables import TABLE_WIDTH, fold_line

__all__ = ["OnceConsole", "OnceStream", "SaidOnce"]

NOTES = ("note:", "consolidation:", "warning:")


class SaidOnce:
    def __init__(self) -> None:
        self.counts: dict[str, int] = {}  # a note's shape (its figures blanked) -> times said
        self.first_said: dict[str, str] = {}  # its shape -> the text printed

    def first(self, text: str) -> bool:
        """Whether ``text`` is to be printed: not a note, or a note said for the first time (counted; the same
        note with other figures, ``106 %`` then ``145 %`` of a core, is the same note)."""
        if not text.lstrip().startswith(NOTES):
            return True
        shape = re.sub(r"\d+(?:[.,]\d+)*", "#", text)
        self.counts[shape] = self.counts.get(shape, 0) + 1
        self.first_said.setdefault(shape, text)
        return self.counts[shape] == 1

    def summary(self) -> list[str]:
        """Each note said more than once, with its count (folded to the table width)."""
        out = []
        for shape, n in self.counts.items():
            if n > 1:
                head = " ".join(self.first_said[shape].split())
                cut = head if len(head) <= 80 else head[:79] + "…"
                out.append(fold_line(f"said {n} times (printed once above): {cut}", TABLE_WIDTH))
        return out


class OnceConsole(Console):
    """A rich Console whose plain lines are said once (tables and other renderables always print)."""

    def __init__(self, once: SaidOnce, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.once = once

    def print(self, *objects: Any, **kwargs: Any) -> None:  # type: ignore[override]
        if len(objects) == 1 and isinstance(objects[0], str) and not self.once.first(objects[0]):
            return
        super().print(*objects, **kwargs)


class OnceStream:
    """A text stream (standard error) whose notes are said once, folded to the table width."""

    def __init__(self, once: SaidOnce, real: TextIO) -> None:
        self.once, self.real, self.pending, self.dropping = once, real, "", False

    def write(self, text: str) -> int:
        self.pending += text
        *lines, self.pending = self.pending.split("\n")
        for line in lines:
            if line.startswith("  ") and self.dropping:  # the folded rest of a note said before
                continue
            self.dropping = bool(line.strip()) and not self.once.first(line)
            if not self.dropping:  # a note folds to the tables' width; an error: line stays one line
                self.real.write((fold_line(line, TABLE_WIDTH) if line.startswith(NOTES) else line) + "\n")
        return len(text)

    def flush(self) -> None:
        if self.pending:
            self.write("\n")
        self.real.flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)
