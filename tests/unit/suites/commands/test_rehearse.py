"""Tests of ``suites/commands/rehearse.py``: what it refuses in one line, an interrupt said in one line. (Its
judgement: tests/unit/suites/gpucheck/test_rehearsal.py; the rehearsal itself: tests/e2e/test_rehearse.py.)"""

from __future__ import annotations

import pytest

from suites.commands import rehearse


@pytest.mark.parametrize("args,says", [
    (["--gpu", "h200", "strict=true"], "error: strict=true: a rehearsal is no measurement"),
    (["--gpu", "h200", "--only", "a,zz"], "error: --only: no such check zz (gpu-check's: a, b1,"),
    (["--gpu", "h200", "--budget-s", "-5"], "error: --budget-s must be seconds in (0, 86400], got -5"),
    (["--gpu", "a100"], "error: GPU=a100: "),
    (["--gpu", "h200", "extra"], "error: unknown argument(s) extra"),
])
def test_what_it_refuses_is_one_error_line_and_exit_2(capsys, args: list[str], says: str):
    assert rehearse.main(args) == 2
    err = capsys.readouterr().err
    assert err.startswith(says) and len(err.strip().splitlines()) == 1, err


@pytest.mark.heavy
def test_an_interrupted_rehearsal_says_so_in_one_line_and_exits_130(monkeypatch, capsys):
    def interrupted(*args):
        raise KeyboardInterrupt

    monkeypatch.setattr(rehearse, "play", interrupted)
    monkeypatch.setattr(rehearse, "stop_on_signals", lambda: None)  # pytest's own handlers stay
    assert rehearse.main(["--gpu", "h200"]) == 130
    err = capsys.readouterr().err
    assert err.strip().splitlines() == ["rehearse: interrupted; nothing was recorded (its runs' temporary store is "
                                        "removed)"] and "Traceback" not in err


@pytest.mark.heavy
def test_a_rehearsal_stopped_mid_check_says_so_and_never_that_every_judge_holds(monkeypatch, capsys):
    """Round 7: after SIGTERM during check j, `make rehearse --only j,l` dropped row j and said 'every check's judge
    holds'. A stopped rehearsal has no verdict on what it did not finish, and exits 130."""
    from suites.gpucheck.checks import Row
    from suites.gpucheck.rehearsal import Played

    def stopped(*args):
        return Played([Row("j", "skipped: not finished: interrupted (SIGTERM) during j"),
                       Row("l", "skipped: interrupted (SIGTERM) during j")], {"j": 3.0}, {"j": 60.0, "l": 5.0},
                      False, "interrupted (SIGTERM) during j", 540.0, 70.0)

    monkeypatch.setattr(rehearse, "play", stopped)
    monkeypatch.setattr(rehearse, "stop_on_signals", lambda: None)
    assert rehearse.main(["--gpu", "h200", "--only", "j,l"]) == 130
    out = capsys.readouterr().out
    assert "every check's judge holds" not in out and "stopped: interrupted (SIGTERM) during j" in out
