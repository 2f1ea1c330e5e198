"""``make bench-ml`` (suites/commands/selfmeasure_ml.py) judges the harness by the CI of its per-round ratios."""

from __future__ import annotations

import math


def test_bench_ml_judges_the_harness_by_the_ci_of_its_per_round_ratios():
    from gpu_probe.stats import goal
    from suites.commands.selfmeasure_ml import GOAL, judge

    iv, word = judge([90.0, 91.0, 89.0], [100.0, 100.5, 99.5])  # ~0.9 every round: the harness costs 10 %
    assert word == "overhead" and iv.n == 3 and iv.high < 1 and goal(iv, GOAL) == "missed"
    iv, word = judge([99.0, 101.0, 98.5, 100.5], [100.0, 100.0, 100.0, 100.0])
    assert word == "within noise" and iv.low < 1 < iv.high and goal(iv, GOAL) == "met"
    iv, word = judge([80.0, 110.0, 95.0], [100.0, 100.0, 100.0])  # too noisy to say whether 0.97 is met
    assert word.startswith("inconclusive (CI ±") and goal(iv, GOAL) == "undecided"
    assert judge([100.0], [100.0])[1] == "no spread (n = 1)"
    # a blank rate is no figure: its round is left out, and with none left no verdict or goal is drawn from it
    iv, word = judge([math.nan, 99.0], [100.0, 100.0])
    assert iv.n == 1 and word == "no spread (n = 1)"
    iv, word = judge([math.nan, math.nan], [100.0, 100.0])
    assert word == "no rate" and goal(iv, GOAL) == "no rate"
    from suites.commands.selfmeasure_ml import row_figures

    cells = row_figures({"metrics": {"timed_s": 0.2, "timed_steps": 15.0}, "info": {"sized_by": "work"}},
                        [math.nan], [100.0], ["guest: 15 timed steps < 20"])
    assert cells[-2:] == ["no rate: guest: 15 timed steps < 20"] * 2 and cells[2] == "-"
