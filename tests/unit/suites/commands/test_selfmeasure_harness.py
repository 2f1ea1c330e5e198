"""Tests of ``suites/commands/selfmeasure_harness.py`` (``make bench-harness``) on figures given to it: what its
table says of each figure and goal (its run through the CLI: tests/e2e/test_docs.py runs the documented line)."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from suites.commands import selfmeasure_harness as bench
from suites.run import harness


def doc(share: float, gaps: list[float]) -> dict[str, object]:
    return {"measured_share": share, "cost_per_repeat_s": gaps, "first_window_s": 3.0,
            "gaps": [dict.fromkeys(harness.PARTS, g / len(harness.PARTS)) for g in gaps]}


def shown(walls: list[float], docs: list[dict[str, object]]) -> str:
    buf = io.StringIO()
    Console(file=buf, width=140).print(bench.table(walls, docs, {"an empty Python process": [0.02, 0.03]}))
    return buf.getvalue()


def test_the_goals_are_judged_on_the_medians_and_said_with_their_spread():
    text = shown([13.0, 11.0, 11.5], [doc(0.5, [0.2, 0.3]), doc(0.45, [0.25, 0.9])])
    row = next(line for line in text.splitlines() if "cost per repeat after the first" in line)
    assert "0.28" in row and "0.20-0.90" in row and "| 4 " in row.replace("│", "|") and "<= 0.5: met" in row
    wall = next(line for line in text.splitlines() if "comparison's wall" in line)
    assert "11.5" in wall and "11.0-13.0" in wall and "<= 12: met" in wall
    assert "48" in next(line for line in text.splitlines() if "measured share" in line)
    assert "floor: an empty Python process" in text
    assert "<= 12: missed by 1.00" in shown([13.0], [doc(0.4, [0.6])]) and "<= 0.5: missed by 0.10" in \
        shown([13.0], [doc(0.4, [0.6])])


def test_nothing_measured_is_said_so_not_a_number():
    text = shown([], [])
    assert "not measured" in text and "nan" not in text


@pytest.mark.parametrize("argv", [["--rounds", "0"], ["--step-ms", "0"], ["--window-s", "0.1"]])
def test_bad_settings_are_refused_before_anything_runs(argv: list[str], capsys: pytest.CaptureFixture[str]):
    with pytest.raises(SystemExit) as stop:
        bench.parse(argv)
    assert stop.value.code == 2 and "error:" in capsys.readouterr().err


def test_ctrl_c_shows_the_rounds_so_far_and_exits_130(monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str]):
    rounds = iter([(13.0, doc(0.5, [0.2, 0.3]))])

    def one_round(args, tmp):
        for done in rounds:
            return done
        raise KeyboardInterrupt

    monkeypatch.setattr(bench, "floor_s", lambda code, n: [0.02] * n)
    monkeypatch.setattr(bench, "one_round", one_round)
    assert bench.main(["--rounds", "3"]) == 130
    said = capsys.readouterr().out
    assert "interrupted after 1 round(s): the rounds so far" in said and "1 round(s)" in said and "13.0" in said
