"""Column widths for a rich table that must fit a width without breaking a word: rich shrinks the widest columns
first and folds or ellipsises words it could have kept whole ('inconclusive' -> 'inconclusiv' / 'e' in an
11-column table that had room for every word). Each column gets its longest word, then a share of what is left in
proportion to what it would take on one line."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text

__all__ = ["fit"]


def plain_lines(cell: object) -> list[str]:
    return (cell.plain if isinstance(cell, Text) else Text.from_markup(str(cell)).plain).splitlines() or [""]


def fit(table: Table, width: int) -> Table:
    """``table`` with each column's width set so the whole is at most ``width`` columns and no word is cut, where
    the words allow it (else rich's own layout, unchanged)."""
    cols = table.columns
    if not cols:
        return table
    lows, highs = [], []
    for col in cols:
        lines = [ln for cell in [col.header, *col._cells] for ln in plain_lines(cell)]
        lows.append(max((len(w) for ln in lines for w in ln.split()), default=1))
        highs.append(max(max((len(ln) for ln in lines), default=1), lows[-1]))
    room = width - (3 * len(cols) + 1)  # a bar before each column and after the last, one space each side
    if sum(highs) <= room or sum(lows) > room:
        return table
    spare, want = room - sum(lows), [h - lo for lo, h in zip(lows, highs, strict=True)]
    widths = [lo + (spare * w) // max(1, sum(want)) for lo, w in zip(lows, want, strict=True)]
    for col, w in zip(cols, widths, strict=True):
        col.width, col.min_width, col.max_width = w, None, None
    return table
