"""Tests of ``suites/render/once.py``: a repeated line is printed once, counted, and summed up with its count."""

from __future__ import annotations

import io

from rich.table import Table

from suites.render.once import OnceConsole, OnceStream, SaidOnce

NOTE = "consolidation: 5 guests x 8192 MiB of memory > this host's 24,000 MiB: each guest gets 4096 MiB"


def test_a_note_said_many_times_is_printed_once_and_summed_up_with_its_count():
    once, text = SaidOnce(), io.StringIO()
    out = OnceConsole(once, file=text, width=120)
    for _ in range(55):
        out.print(NOTE)
    out.print("another line")
    table = Table("a")
    out.print(table)
    out.print(table)  # a renderable always prints
    assert text.getvalue().count("consolidation: 5 guests") == 1 and text.getvalue().count("┏") == 2
    (summary,) = once.summary()
    assert summary.startswith("said 55 times (printed once above): consolidation: 5 guests x 8192 MiB")
    assert all(len(line) <= 120 for line in summary.splitlines())


def test_standard_errors_lines_are_said_once_and_folded_to_120_columns():
    once, real = SaidOnce(), io.StringIO()
    err = OnceStream(once, real)
    busy = "note: host busy before the run (other processes: {} % of a core > host_busy_pct=25): " + "x " * 60
    for i in range(15):
        err.write(busy.format(100 + i) + "\n")  # another figure each time: the same note
    err.write("half a line")
    err.flush()
    lines = real.getvalue().splitlines()
    assert sum(ln.startswith("note: host busy") for ln in lines) == 1 and lines[-1] == "half a line"
    assert max(map(len, lines)) <= 120 and list(once.counts.values()) == [15]
    assert "(other processes: 100 % of a core" in lines[0]


def test_progress_and_figures_always_print_and_a_notes_folded_rest_goes_with_it():
    once, real = SaidOnce(), io.StringIO()
    err = OnceStream(once, real)
    for _ in range(3):
        err.write("progress: g0 starting 0/?\n")
        err.write("note: host busy before the run (106 % of a core): every figure is marked host busy\n")
        err.write("  and its verdicts inconclusive\n")
    lines = real.getvalue().splitlines()
    assert lines.count("progress: g0 starting 0/?") == 3 and lines.count("  and its verdicts inconclusive") == 1
    assert [s.split(":", 1)[0] for s in once.summary()] == ["said 3 times (printed once above)"]
