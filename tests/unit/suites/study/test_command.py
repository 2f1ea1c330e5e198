"""Tests of ``suites/study/command.py``, ``make study``'s entry point: ``--help`` prints what it does; ``--plan``
prints the plan and starts and writes nothing; a bad argument is one ``error:`` line and exit 2 before anything is
written. (A whole study runs in tests/e2e/test_reference_study.py.)"""

from __future__ import annotations

from pathlib import Path

import pytest

from suites.study import command
from tests.support.helpers import store_at


def args(tmp_path: Path, *more: str) -> list[str]:
    return [f"study.out_dir={tmp_path / 'study'}", "study.trials=false", f"artifact_dir={tmp_path / 'art'}",
            f"tracking_uri={store_at(tmp_path / 'mlflow.db')}", *more]


def test_help_says_what_the_study_is(capsys):
    assert command.main(["--help"]) == 0
    assert "the reference\nstudy reproduced in one command" in capsys.readouterr().out


@pytest.mark.heavy
def test_plan_prints_the_plan_and_starts_nothing(tmp_path: Path, capsys):
    assert command.main([*args(tmp_path), "--plan"]) == 0
    said = capsys.readouterr().out
    assert "study: " in said and "repeat(s) per phase, estimate " in said and "  run  episode 2 mixed: m60-8q" in said
    assert not (tmp_path / "study").exists()


@pytest.mark.parametrize("bad, says", [("study.budget_s=-5", "study.budget_s: must be seconds in (0, 604800]"),
                                       ("workload.no_such_key=1", "no_such_key")])
def test_a_bad_argument_is_one_error_line_before_anything_is_written(tmp_path: Path, capsys, bad: str, says: str):
    with pytest.raises(SystemExit) as exit_:
        command.main([*args(tmp_path), bad])
    err = capsys.readouterr().err.strip().splitlines()
    assert exit_.value.code == 2 and err[-1].startswith("error: ") and says in err[-1]
    assert not (tmp_path / "study").exists()
