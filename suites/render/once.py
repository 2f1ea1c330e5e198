"""Notes said once: a long command (a sizing's parts, each placed again while it waits for cores, each phase looking
at the host) repeats the same note tens or hundreds of times. A note (a line starting ``note:``, ``consolidation:``
or ``warning:``) is printed the first time; a repeat is counted, not printed (its folded continuation lines with
it), and :meth:`SaidOnce.summary` gives each repeated note once more with its count. Other lines (progress, tables,
each phase's own figures) always print."""

from __future__ import annotations

from typing import Any, TextIO

from rich.console import Console

from suites.render.tables import TABLE_WIDTH, fold_line

__all__ = ["OnceConsole", "OnceStream", "SaidOnce"]

NOTES = ("note:", "consolidation:", "warning:")


class SaidOnce:
    def __init__(self) -> None:
        self.counts: dict[str, int] = {}

    def first(self, text: str) -> bool:
        """Whether ``text`` is to be printed: not a note, or a note said for the first time (counted)."""
        if not text.lstrip().startswith(NOTES):
            return True
        self.counts[text] = self.counts.get(text, 0) + 1
        return self.counts[text] == 1

    def summary(self) -> list[str]:
        """Each line said more than once, with its count (folded to the table width)."""
        out = []
        for text, n in self.counts.items():
            head = " ".join(text.split())
            cut = head if len(head) <= 80 else head[:79] + "…"
            out.append(fold_line(f"said {n} times (printed once above): {cut}", TABLE_WIDTH))
        return [line for line, n in zip(out, self.counts.values(), strict=True) if n > 1]


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
