"""Tests of ``suites/commands/rehearse.py``: each check's judge misses where it should. (The device files:
tests/unit/suites/gpucheck/test_device_file.py; the rehearsal itself: tests/e2e/test_rehearse.py.)"""

from __future__ import annotations

import math

from suites.commands import rehearse
from suites.commands.rehearse import (
    data_checks,
    judge_budget,
    judge_memory,
    judge_overlap,
    judge_ratio,
    judge_window,
)
from suites.gpucheck import device_file


def test_every_judge_misses_what_it_guards():
    assert judge_ratio(9.8, "time per image").ok and not judge_ratio(2.7, "time per image").ok  # cce1a94's 2.70
    assert not judge_ratio(10.0, "train time").ok  # equal work is time per image, whatever the figure
    assert judge_window("g0", 2.1, 2.0).ok and not judge_window("g0", 0.56, 2.0).ok
    assert not judge_window("bench-ml fixed-step", math.nan, 2.0).ok  # a row without a rate
    assert judge_overlap(98.0, 3).ok and not judge_overlap(40.0, 1).ok  # one pass beside a 2 s window
    assert judge_memory("m60-1q", 684, 230, 1024).ok and not judge_memory("m60-1q", 684, 257, 1024).ok
    assert judge_budget("study plan", 377, 480).ok and not judge_budget("make size plan", 2700, 540).ok


def test_a_guest_holding_the_whole_split_in_fp32_misses_m60_1q():
    """cce1a94's mnist-torch: the context and ~565 MB of whole-split fp32 temporaries, past M60-1Q's 1,024 MiB."""
    dev = device_file.load("h200")
    assert dev["cuda_context_MiB"] + 565 > 1024
    assert all(c.ok for c in data_checks(dev, 230.0))
    assert [c.name for c in data_checks(dev, 565.0) if not c.ok] == ["memory within cap: m60-1q"]
    # the H200's m60-1q guest evaluating at 2,000 images: 257 MiB counted, stopped at its cap on the GPU
    assert [c.name for c in data_checks(dev, 257.0) if not c.ok] == ["memory within cap: m60-1q"]


def test_strict_refuses_a_rehearsal(capsys):
    assert rehearse.main(["--gpu", "h200", "strict=true"]) == 2
    assert capsys.readouterr().err.startswith("error: strict=true: a rehearsal is no measurement")


def test_an_interrupted_rehearsal_says_so_in_one_line_and_exits_130(monkeypatch, capsys):
    def interrupted(*args):
        raise KeyboardInterrupt

    monkeypatch.setattr(rehearse, "run_checks", interrupted)
    assert rehearse.main(["--gpu", "h200", "--short"]) == 130
    err = capsys.readouterr().err
    assert err.strip().splitlines() == ["rehearse: interrupted; nothing was recorded (its runs' temporary store is "
                                        "removed)"] and "Traceback" not in err
