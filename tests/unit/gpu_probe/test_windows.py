"""Tests of ``gpu_probe/windows.py``."""

from __future__ import annotations

import pytest

from gpu_probe import vocab
from gpu_probe.sampler import SampleSet
from gpu_probe.windows import periods_inside, timed_gpu
from tests.support.driver_samples import T0, WINDOWS, driver_samples, lagging_rows


def test_rows_alone_read_the_idle_time_before_each_window():
    timed = timed_gpu(SampleSet(rows=lagging_rows(), t0=T0), WINDOWS)
    assert timed["timed.gpu0.util_pct.mean"] < 90  # what failed b2 on a healthy H200
    assert f"timed.gpu0.util_pct{vocab.PERIODS}" not in timed and timed["timed.gpu0.power_W.mean"] == 500.0


def test_the_driver_periods_inside_the_windows_give_the_time_kernels_ran():
    samples = SampleSet(rows=lagging_rows(), t0=T0, util_samples={0: driver_samples()})
    timed = timed_gpu(samples, WINDOWS)
    assert timed["timed.gpu0.util_pct.mean"] == pytest.approx(99.0)
    assert timed["timed.gpu0.util_pct.max"] == 99.0 and timed["timed.gpu0.util_pct.p95"] == 99.0
    # 2 s windows hold 11 whole periods of 1/6 s each (a straddling one is left out): 22
    assert timed[f"timed.gpu0.util_pct{vocab.PERIODS}"] == 22
    assert timed["timed.samples"] == 42 and timed["timed.gpu0.power_W.mean"] == 500.0  # the rows still count


def test_a_period_straddling_a_window_edge_is_left_out_and_the_mean_is_time_weighted():
    samples = [(10.0, 0.0), (10.5, 0.0), (11.0, 50.0), (13.0, 100.0), (13.5, 100.0)]
    assert periods_inside(samples, [(10.4, 13.2)]) == [(0.5, 50.0), (2.0, 100.0)]
    timed = timed_gpu(SampleSet(rows=[{"t_s": 1.0, "gpu0.util_pct": 7.0}], t0=10.0,
                                util_samples={0: samples}), [(10.4, 13.2)])
    assert timed["timed.gpu0.util_pct.mean"] == pytest.approx((0.5 * 50 + 2.0 * 100) / 2.5)


def test_windows_shorter_than_a_period_keep_the_rows_reading():
    samples = SampleSet(rows=lagging_rows(), t0=T0, util_samples={0: [(T0, 0.0), (T0 + 7.0, 60.0)]})
    timed = timed_gpu(samples, WINDOWS)
    assert f"timed.gpu0.util_pct{vocab.PERIODS}" not in timed and timed["timed.gpu0.util_pct.mean"] < 90
