"""Tests of ``suites/render/fit.py``: a wide table keeps every word whole where the words fit."""

from __future__ import annotations

import io

from rich.console import Console
from rich.table import Table

from suites.render.fit import fit
from tests.support.helpers import broken_tokens


def wide() -> Table:
    """make bench-ml's eleven columns, where rich alone cut 'inconclusive' and 'tensorflow,' though they had room."""
    t = Table()
    for col in ("workload", "device", "vCPUs", "timed window", "n", "guest images/s", "bare images/s", "ratio",
                "[95% CI]", "verdict", "goal >= 0.97"):
        t.add_column(col, overflow="fold", no_wrap=col == "workload")
    t.add_row("mnist-torch", "cpu", "2", "2.0 s, 59 steps (by time)", "3", "3,154", "3,300", "0.96", "[0.93, 0.99]",
              "overhead", "met")
    t.add_row("mnist-tf", "-", "2", "needs tensorflow, not installed in this Python", "0", "-", "-", "-", "-",
              "skipped", "skipped")
    t.add_row("cifar10-torch", "cuda:0 (NVIDIA H200)", "2", "2.1 s, 12 steps (by work)", "3", "182,675", "190,000",
              "0.96", "[0.93, 0.99]", "inconclusive", "undecided")
    return t


def rendered(t: Table) -> list[str]:
    out = Console(width=120, record=True, file=io.StringIO())
    out.print(t)
    return out.export_text().splitlines()


def test_eleven_columns_of_short_words_fit_120_columns_with_every_word_whole():
    alone = wide()
    assert broken_tokens(alone, rendered(alone))  # rich alone cuts words it had room for
    fitted = fit(wide(), 120)
    lines = rendered(fitted)
    assert max(map(len, lines)) <= 120 and broken_tokens(fitted, lines) == []


def test_a_table_that_fits_or_whose_words_cannot_is_left_to_rich():
    narrow = Table()
    narrow.add_column("a")
    narrow.add_row("short")
    assert fit(narrow, 120).columns[0].width is None
    too_long = Table()
    for _ in range(4):
        too_long.add_column("x")
    too_long.add_row(*["y" * 40] * 4)
    assert all(c.width is None for c in fit(too_long, 120).columns)
