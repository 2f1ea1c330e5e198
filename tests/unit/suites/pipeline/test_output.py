"""Tests of ``suites/pipeline/output.py``: plain lines folded at spaces, a figure that fails is a warning."""

from __future__ import annotations

import io

from rich.console import Console

from suites.pipeline import output


def test_a_plain_line_folds_at_spaces_and_a_failed_figure_is_one_warning():
    buf = io.StringIO()
    out = Console(file=buf, width=120)
    output.say(out)("word " * 40)
    assert all(len(line) <= 120 for line in buf.getvalue().splitlines()) and len(buf.getvalue().splitlines()) == 2

    def broken() -> None:
        raise ValueError("no axes\nsecond line")

    assert output.best_effort(out, "utilisation plot", broken) is None
    assert "warning: utilisation plot not written (no axes)" in buf.getvalue()
