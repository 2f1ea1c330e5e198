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


def test_normalised_rows_carry_n_ci_and_verdict():
    from suites.run.compare import PhaseRow, normalise

    base = PhaseRow("a", "p", 1, "ok", 100.0, 10.0, 90, 50, math.nan, images_per_sec_runs=[100.0, 102.0, 98.0],
                    train_time_runs=[10.0, 10.1, 9.9], n=3)
    fast = PhaseRow("b", "p", 1, "ok", 200.0, 5.0, 90, 50, math.nan, images_per_sec_runs=[200.0, 205.0, 196.0],
                    train_time_runs=[5.0, 5.1, 4.9], n=3)
    normalise([base, fast], "a")
    assert fast.throughput_x == pytest.approx(2.0, rel=0.02) and fast.throughput_x_ci_low > 1.9
    assert (fast.throughput_verdict, fast.time_verdict) == ("faster", "faster")
    assert base.throughput_verdict == "baseline" and base.throughput_x == 1.0


@pytest.mark.e2e
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
