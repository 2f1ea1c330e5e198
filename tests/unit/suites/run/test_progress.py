"""Tests of ``suites/run/progress.py``: off a terminal, one progress line per guest state at most every
``log_every_s`` (make size promises a line at least every 10 s), none when quiet."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from suites.run import progress
from suites.run.progress import ProgressView


def guest(gid: str, state: str, done: int, total: int | None) -> SimpleNamespace:
    return SimpleNamespace(id=gid, state=state, done_steps=done, total_steps=total,
                           spec=SimpleNamespace(workload="idle", profile="m60-2q"))


def test_a_line_comes_at_most_every_interval_and_says_each_guest(monkeypatch: pytest.MonkeyPatch,
                                                                 capsys: pytest.CaptureFixture[str]):
    clock = [100.0]
    monkeypatch.setattr(progress.time, "monotonic", lambda: clock[0])
    guests = [guest("g0", "running", 12, 40), guest("g1", "starting", 0, None)]
    with ProgressView("log", log_every_s=8.0) as view:
        assert not view.live and view.log_every_s < 10
        view.update(guests)
        clock[0] += 5.0
        view.update(guests)  # 5 s later: not yet
        clock[0] += 3.5
        view.update(guests)
    lines = capsys.readouterr().err.splitlines()
    assert lines == ["progress: g0 running 12/40 | g1 starting 0/?"] * 2


def test_quiet_says_nothing(capsys: pytest.CaptureFixture[str]):
    with ProgressView("quiet") as view:
        view.update([guest("g0", "running", 1, 2)])
    assert capsys.readouterr().err == ""


def test_a_guest_still_setting_up_is_said_once_a_line_with_its_time_of_start_timeout_s(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]):
    """Hostile round O2: 'progress: g0 starting 0/?' for 200 s, with no end in sight."""
    clock = [100.0]
    monkeypatch.setattr(progress.time, "monotonic", lambda: clock[0])
    with ProgressView("log", log_every_s=8.0, start_timeout_s=300) as view:
        clock[0] += 45.0
        view.update([guest("g0", "starting", 0, None), guest("g1", "starting", 0, None)])
        clock[0] += 10.0
        view.update([guest("g0", "running", 3, 40), guest("g1", "running", 2, 40)])
    assert capsys.readouterr().err.splitlines() == [
        "progress: g0 starting 0/? | g1 starting 0/? (set-up 45 s of scenario.start_timeout_s=300)",
        "progress: g0 running 3/40 | g1 running 2/40"]
