"""Tests of ``gpu_probe/stats.py``."""

from __future__ import annotations

import math

import pytest

from gpu_probe.stats import clock_offset, percentile, ratio_interval, summarize


def test_clock_offset_is_the_median_round_trip_midpoint_and_says_its_residual():
    true = 2.5  # the node's clock runs 2.5 s ahead
    trips = [(t, t + 0.004 + true, t + 0.010) for t in (100.0, 101.0, 102.0, 103.0, 104.0)]
    trips.append((105.0, 105.0 + 0.9 + true, 105.95))  # one reply held up on its way back
    off = clock_offset(trips)
    assert off.n == 6 and off.offset_s == pytest.approx(true - 0.001, abs=1e-9)  # 4 ms out, 6 back: 1 ms bias
    assert off.residual_s == pytest.approx(0.005)  # the rounds it came from bound it by half their round trip
    assert off.spread_s == pytest.approx(0.0, abs=1e-9)
    assert off.text() == "+2499.0 ms ± 5.0 (n=6)"
    assert math.isnan(clock_offset([]).offset_s)


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


def test_t_quantiles_match_the_tables():
    from gpu_probe.stats import t_quantile

    for df, expected in ((1, 12.706), (2, 4.303), (4, 2.776), (10, 2.228), (30, 2.042)):
        assert t_quantile(0.975, df) == pytest.approx(expected, abs=1e-3)


def test_overlapping_phases_are_within_noise_only_where_the_interval_is_narrow():
    from gpu_probe.stats import WITHIN_NOISE, paired_ratios, ratio_interval, verdict

    base, other = [100.0, 101.0, 99.0, 100.5], [100.5, 100.0, 100.0, 101.0]
    iv = ratio_interval(paired_ratios(other, base))
    assert iv.n == 4 and iv.method == "log-t" and iv.low < 1.0 < iv.high
    assert verdict(iv, higher_is_better=True) == WITHIN_NOISE
    # the same straddling of 1 with a +-13 % interval is no finding either way: inconclusive, with what would settle it
    base, other = [100.0, 110.0, 95.0, 105.0], [104.0, 98.0, 101.0, 108.0]
    wide = verdict(ratio_interval(paired_ratios(other, base)), higher_is_better=True)
    assert wide.startswith("inconclusive (CI ±") and "n=4;" in wide and "repeats would settle it" in wide


def test_clearly_separated_phases_are_faster_or_slower():
    from gpu_probe.stats import FASTER, SLOWER, confidence_interval, paired_ratios, verdict

    base, other = [100.0, 101.0, 99.0], [150.0, 152.0, 149.0]
    iv = confidence_interval(paired_ratios(other, base))
    assert iv.low > 1.4 and verdict(iv, higher_is_better=True) == FASTER  # images/s up: faster
    assert verdict(iv, higher_is_better=False) == SLOWER  # train time up: slower
    down = confidence_interval(paired_ratios(base, other))
    assert verdict(down, higher_is_better=True) == SLOWER and verdict(down, higher_is_better=False) == FASTER


def test_one_repeat_has_no_spread():
    from gpu_probe.stats import NO_SPREAD, confidence_interval, verdict

    iv = confidence_interval([1.5])
    assert iv.n == 1 and iv.median == 1.5 and math.isnan(iv.low) and not iv.spread
    assert verdict(iv, higher_is_better=True) == NO_SPREAD


def test_two_repeats_get_a_bootstrap_interval():
    from gpu_probe.stats import confidence_interval

    iv = confidence_interval([1.0, 1.2])
    assert iv.method == "bootstrap" and 1.0 <= iv.low < 1.1 < iv.high <= 1.2


def test_a_ratio_interval_is_that_of_the_ratios_geometric_mean():
    iv = ratio_interval([0.5, 2.0])
    assert iv.mean == pytest.approx(1.0) and iv.low > 0 and iv.method == "log-bootstrap"
    assert math.isnan(ratio_interval([1.3]).low) and ratio_interval([1.3]).median == 1.3


def test_two_independent_runs_ratio_interval_excludes_1_where_b_is_clearly_slower():
    from gpu_probe.stats import change, unpaired_ratio_interval, worse_by_pct

    iv = unpaired_ratio_interval([100.0, 101.0, 99.0], [83.0, 84.0, 82.0])
    assert iv.n == 3 and iv.median == pytest.approx(0.83) and iv.high < 1.0 < 1.0 / iv.low
    assert change(iv, higher_is_better=True) == "slower" and change(iv, higher_is_better=False) == "faster"
    assert worse_by_pct(iv, True) == pytest.approx((1 - iv.high) * 100) and worse_by_pct(iv, True) > 14


def test_equal_runs_are_no_change_a_wide_interval_inconclusive_and_one_repeat_no_spread():
    from gpu_probe.stats import NO_CHANGE, NO_SPREAD, change, unpaired_ratio_interval

    assert change(unpaired_ratio_interval([100.0, 101.0, 99.0], [100.0, 99.5, 101.0]), True) == NO_CHANGE
    wide = change(unpaired_ratio_interval([100.0, 110.0, 90.0], [100.0, 95.0, 105.0]), True)
    assert wide.startswith("inconclusive (CI ±") and "repeats would settle it" in wide
    one = unpaired_ratio_interval([100.0], [90.0, 91.0])
    assert change(one, True) == NO_SPREAD and one.median == pytest.approx(0.905, rel=1e-3) and one.n == 1
    same = unpaired_ratio_interval([5.0, 5.0], [5.0, 5.0])
    assert (same.low, same.high) == (1.0, 1.0) and change(same, True) == NO_CHANGE


def test_the_unpaired_interval_matches_welchs_t_on_the_logs():
    import math
    import statistics

    from gpu_probe.stats import t_quantile, unpaired_ratio_interval

    a, b = [10.0, 11.0, 12.0, 10.5], [12.0, 13.5, 12.5]
    la, lb = [math.log(x) for x in a], [math.log(x) for x in b]
    va, vb = statistics.variance(la) / 4, statistics.variance(lb) / 3
    df = (va + vb) ** 2 / (va**2 / 3 + vb**2 / 2)
    d, half = statistics.fmean(lb) - statistics.fmean(la), t_quantile(0.975, df) * math.sqrt(va + vb)
    iv = unpaired_ratio_interval(a, b)
    assert (iv.low, iv.high) == pytest.approx((math.exp(d - half), math.exp(d + half)))
