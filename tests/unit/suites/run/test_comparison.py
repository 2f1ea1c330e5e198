"""Tests of ``suites/run/comparison.py``."""

from __future__ import annotations

import json
import math

import pytest

from suites.run.comparison import PhaseRow, normalise


def test_normalise_to_the_named_baseline():
    rows = [PhaseRow("a", "p", 1, "ok", 100.0, 10.0, 90, 50, float("nan")),
            PhaseRow("b", "p", 1, "ok", 250.0, 4.0, 95, 60, float("nan"))]
    normalise(rows, "b")
    assert (rows[0].throughput_x, rows[0].time_x) == (0.4, 2.5) and rows[1].throughput_x == 1.0


def test_a_busy_repeat_makes_a_comparison_inconclusive():
    def row(label: str, rates: list[float], busy: str = "") -> PhaseRow:
        return PhaseRow(label, "cpu", 1, "ok", rates[0], 1.0, 100, 50, float("nan"), n=3, host_busy=busy,
                        images_per_sec_runs=rates, train_time_runs=[1000 / r for r in rates])

    quiet = normalise([row("a", [100, 101, 99]), row("b", [150, 151, 149])], "a")
    assert quiet[1].throughput_verdict == "faster"
    busy = normalise([row("a", [100, 101, 99]), row("b", [150, 151, 149], "host busy (other processes: 98 % of "
                                                                          "a core; > host_busy_pct=25)")], "a")
    assert busy[1].throughput_verdict.startswith("inconclusive (host busy (other processes: 98 %")
    assert busy[1].time_verdict == busy[1].throughput_verdict
    assert json.dumps(busy[1].csv())  # the verdict reaches comparison.csv as it is


def test_normalised_rows_carry_n_ci_and_verdict():
    from suites.run.comparison import PhaseRow, normalise

    base = PhaseRow("a", "p", 1, "ok", 100.0, 10.0, 90, 50, math.nan, images_per_sec_runs=[100.0, 102.0, 98.0],
                    train_time_runs=[10.0, 10.1, 9.9], n=3)
    fast = PhaseRow("b", "p", 1, "ok", 200.0, 5.0, 90, 50, math.nan, images_per_sec_runs=[200.0, 205.0, 196.0],
                    train_time_runs=[5.0, 5.1, 4.9], n=3)
    normalise([base, fast], "a")
    assert fast.throughput_x == pytest.approx(2.0, rel=0.02) and fast.throughput_x_ci_low > 1.9
    assert (fast.throughput_verdict, fast.time_verdict) == ("faster", "faster")
    assert base.throughput_verdict == "baseline" and base.throughput_x == 1.0


def test_a_phases_images_per_second_sums_the_guests_that_train():
    from types import SimpleNamespace

    from suites.run.comparison import total_images_per_sec

    def guest(metrics: dict[str, float]) -> SimpleNamespace:
        return SimpleNamespace(result=SimpleNamespace(metrics=metrics))

    # a consolidation step: a CAD guest (no image rate) beside the ML guest; its row read '-' on 6e20b60
    step = SimpleNamespace(ok_guests=[guest({"images_per_sec": math.nan}), guest({"images_per_sec": 599.6})])
    assert total_images_per_sec(step) == 599.6
    assert math.isnan(total_images_per_sec(SimpleNamespace(ok_guests=[guest({"images_per_sec": math.nan})])))


def test_phases_sized_by_time_compare_time_per_image_not_their_windows():
    from suites.run.comparison import TIME_PER_IMAGE, TRAIN_TIME, row_tags

    # the fixed-step pair: 5 ms steps trained 108 steps in 0.56 s, 50 ms steps 30 in 1.51 s (the 20-step
    # floor bound only the slow one): the ratio of train times read 2.70, of equal work it is ~10
    fast = PhaseRow("fast", "p", 1, "ok", 24876.0, 0.56, 90, 50, math.nan, sized_by_time=True,
                    images_per_sec_runs=[24876.0, 24500.0, 25100.0], train_time_runs=[0.56, 0.55, 0.57], n=3)
    slow = PhaseRow("slow", "p", 1, "ok", 2549.0, 1.51, 90, 50, math.nan, sized_by_time=True,
                    images_per_sec_runs=[2549.0, 2530.0, 2560.0], train_time_runs=[1.51, 1.50, 1.52], n=3)
    normalise([fast, slow], "fast")
    assert slow.time_basis == TIME_PER_IMAGE and slow.time_x == pytest.approx(24876 / 2549, rel=0.02)
    assert slow.time_x == pytest.approx(1 / slow.throughput_x, rel=1e-6) and slow.time_verdict == "slower"
    assert row_tags([fast, slow])["bench.time_basis.slow"] == TIME_PER_IMAGE and slow.csv()["time_basis"]
    same_work = [PhaseRow(label, "p", 1, "ok", 100.0, t, 90, 50, math.nan) for label, t in (("a", 10.0), ("b", 5.0))]
    normalise(same_work, "a")
    assert same_work[1].time_basis == TRAIN_TIME and same_work[1].time_x == 0.5  # sized by work: its train time
