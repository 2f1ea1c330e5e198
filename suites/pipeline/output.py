"""How a command speaks: its console (tables folded to 120 columns), its plain lines, and a figure or report that
fails as a warning, never the end of the measurements beside it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rich.console import Console

from suites.config.paths import relative_paths
from suites.errors import first_line
from suites.render import tables

__all__ = ["best_effort", "console", "say"]


def console() -> Console:
    """Tables fold to 120 columns at most (fewer where COLUMNS or the terminal says so); off a terminal rich would
    assume 80. Plain lines (:func:`say`) are never wrapped."""
    return Console(width=tables.console_width())


def say(out: Console) -> Callable[[str], None]:
    """Plain lines (no markup), folded at spaces to 120 columns as a table is (rich's own wrap would cut a path or
    a command inside a word): a path longer than a line stands alone on its own."""
    return lambda text: out.print(tables.fold_line(relative_paths(text)), markup=False, highlight=False,
                                  soft_wrap=True)


def best_effort(out: Console, what: str, draw: Callable[[], Any]) -> Any:
    """A figure or report is worth a warning when it fails, never the measurements beside it."""
    try:
        return draw()
    except Exception as exc:
        say(out)(f"warning: {what} not written ({first_line(exc)})")
        return None
