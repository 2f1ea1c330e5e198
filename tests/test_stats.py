import math

import pytest

from gpu_probe.stats import percentile, summarize


def test_known_sample():
    s = summarize([2, 4, 4, 4, 5, 5, 7, 9])
    assert s.n == 8
    assert s.mean == 5.0
    assert s.median == 4.5
    assert s.min == 2 and s.max == 9
    assert s.stdev == pytest.approx(2.138089935, rel=1e-9)  # sample (n-1) standard deviation
    assert s.stderr == pytest.approx(2.138089935 / math.sqrt(8), rel=1e-9)
    assert s.mad == 0.5  # |x - 4.5| = 2.5 .5 .5 .5 .5 .5 2.5 4.5 -> median 0.5
    assert s.olympic_mean == pytest.approx((4 + 4 + 4 + 5 + 5 + 7) / 6)
    assert s.cov == pytest.approx(2.138089935 / 5.0, rel=1e-9)


def test_percentile_matches_linear_interpolation():
    xs = [float(x) for x in range(1, 11)]  # numpy.percentile(1..10, 95) == 9.55
    assert percentile(xs, 95) == pytest.approx(9.55)
    assert percentile(xs, 50) == pytest.approx(5.5)
    assert percentile(xs, 0) == 1.0 and percentile(xs, 100) == 10.0


def test_olympic_mean_drops_one_fastest_and_one_slowest():
    s = summarize([100, 1, 50, 50, 50])
    assert s.olympic_mean == 50.0
    assert s.mean == pytest.approx(50.2)


def test_missing_values_are_dropped_and_small_samples_are_safe():
    s = summarize([float("nan"), None, 3.0])
    assert s.n == 1 and s.mean == 3.0 and s.stdev == 0.0 and s.olympic_mean == 3.0
    empty = summarize([])
    assert empty.n == 0 and math.isnan(empty.mean) and math.isnan(empty.p95)


def test_as_dict_prefixes_keys():
    d = summarize([1.0, 3.0]).as_dict("ips.")
    assert d["ips.median"] == 2.0 and d["ips.n"] == 2


def test_repeats_become_olympic_means_with_spread():
    from gpu_probe.stats import aggregate_repeats

    runs = [{"images_per_sec": v, "steps": 16.0, "images_per_sec.jitter_mad": 2.0} for v in (100.0, 90.0, 110.0, 400.0)]
    out = aggregate_repeats(runs)
    assert out["images_per_sec"] == 105.0  # (100 + 110) / 2: 90 and 400 dropped
    assert out["images_per_sec.median"] == 105.0 and out["images_per_sec.max"] == 400.0
    assert out["images_per_sec.cov"] == pytest.approx(summarize([100, 90, 110, 400]).cov)
    assert out["steps"] == 16.0 and "steps.cov" not in out and out["repeats"] == 4
    assert out["images_per_sec.jitter_mad"] == 2.0
    assert aggregate_repeats(runs[:1]) == runs[0]
