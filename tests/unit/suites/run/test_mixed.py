"""Tests of ``suites/run/mixed.py``."""

from __future__ import annotations

import math

import pytest

from suites.run.mixed import (
    CONSOLIDATE,
    DOES_NOT_MEET,
    PhaseNumbers,
    by_profile,
    consolidation_metrics,
    derive,
    mixed_verdict,
    overlap_shortfall,
    qos,
)


def figures(cad: tuple[float, float, float], ml: tuple[float, float, float],
            ratio: tuple[float, float, float] = (0.90, 0.85, 0.95), n: int = 3) -> dict[str, float]:
    out: dict[str, float] = {}
    for key, (v, lo, hi) in (("cad_run_time_increase_pct", cad), ("ml_train_time_increase_pct", ml),
                             ("concurrent_vs_sequential", ratio)):
        out.update({key: v, f"{key}.ci_low": lo, f"{key}.ci_high": hi, f"{key}.n": float(n)})
    return out


def test_a_slowdown_that_was_not_measured_is_said_so_not_printed_as_nan():
    from suites.run.mixed import pct_text

    assert pct_text({"ml_train_time_increase_pct": math.nan}, "ml_train_time_increase_pct") == "not measured"
    assert pct_text({"x_pct": 4.0, "x_pct.ci_low": 1.0, "x_pct.ci_high": 7.0}, "x_pct") == "+4.0 % [+1.0, +7.0]"


def test_derive_gives_the_study_figures():
    cad = PhaseNumbers(makespan_s=10.0, host_cpu_pct=40.0, cad_guests=2, cad_run_time_s=8.0, cad_frame_s=0.04,
                       cad_p95_frame_ms=[20.0, 30.0], cad_frames=200, energy_J=1000.0)
    mixed = PhaseNumbers(makespan_s=12.0, host_cpu_pct=70.0, cad_run_time_s=8.4, cad_frame_s=0.042,
                         cad_p95_frame_ms=[30.0, 40.0], cad_frames=200, ml_images_per_sec=1000 / 5.75, ml_images=6000,
                         energy_J=2000.0)
    ml = PhaseNumbers(makespan_s=6.0, host_cpu_pct=30.0, ml_images_per_sec=1000 / 5.0, ml_images=6000)
    d = derive({"cad": cad, "mixed": mixed, "ml": ml})
    assert d["cad_run_time_increase_pct"] == pytest.approx(5.0)
    assert d["ml_train_time_increase_pct"] == pytest.approx(15.0)
    assert (d["sequential_s"], d["concurrent_s"]) == (16.0, 12.0) and d["concurrent_vs_sequential"] == 0.75
    assert (d["cad_p95_frame_ms_alone"], d["cad_p95_frame_ms_mixed"]) == (25.0, 35.0)
    assert d["mixed.images_per_J"] == 3.0 and d["cad.frames_per_J"] == 0.2
    assert math.isnan(d["ml.energy_J"]) and math.isnan(d["ml.images_per_J"])  # no power reading: no energy


def test_a_replay_sized_by_time_is_slowed_per_frame_and_its_sequential_time_scaled_to_its_frames():
    """Beside an open-ended ML guest the replay renders passes for the ML window (workload.min_replay_s): 300
    frames in 2 s where alone it rendered 100 in 1 s. Per frame that is 33 % faster; the ratio of run times (the
    windows) would have said +100 %."""
    cad = PhaseNumbers(makespan_s=3.0, cad_run_time_s=1.0, cad_frame_s=1.0 / 100, cad_frames=100)
    mixed = PhaseNumbers(makespan_s=4.0, cad_run_time_s=2.0, cad_frame_s=2.0 / 300, cad_frames=300,
                         ml_images_per_sec=100.0, ml_images=200)
    ml = PhaseNumbers(makespan_s=2.0, ml_images_per_sec=100.0, ml_images=200)
    d = derive({"cad": cad, "mixed": mixed, "ml": ml})
    assert d["cad_run_time_increase_pct"] == pytest.approx(-33.33, abs=0.01)
    assert d["sequential_s"] == pytest.approx(3.0 * 3 + 2.0)  # CAD alone's time for the mixed phase's frames


def test_qos_needs_every_cad_guest_and_the_ml_guest_within_bounds():
    alone = PhaseNumbers(ml_images_per_sec=1000 / 10.0)
    good = PhaseNumbers(cad_p95_frame_ms=[40.0, 49.0], ml_images_per_sec=1000 / 11.0)
    assert qos(good, alone, 50.0, 15.0) == (True, "")
    assert qos(PhaseNumbers(cad_p95_frame_ms=[40.0, 51.0], ml_images_per_sec=1000 / 11.0), alone, 50.0, 15.0)[1] == \
        "CAD p95 frame time 51.0 ms > 50 ms"
    slow = PhaseNumbers(cad_p95_frame_ms=[1.0], ml_images_per_sec=1000 / 12.0)
    assert "ML slowdown 20.0 % > 15 %" in qos(slow, alone, 50.0, 15.0)[1]
    assert not qos(PhaseNumbers(cad_p95_frame_ms=[1.0], failed=1), None, 50.0, 15.0)[0]
    assert not qos(PhaseNumbers(cad_p95_frame_ms=[]), None, 50.0, 15.0)[0]  # nothing measured is no pass


@pytest.mark.parametrize("p95s,score", [([10, 20, 60], 2), ([60, 10], 0), ([10, 60, 10], 1), ([10, 10], 2)])
def test_consolidation_score_is_the_largest_count_with_every_step_before_passing(p95s: list[int], score: int):
    numbers = {"p/ml": PhaseNumbers(ml_images_per_sec=1000 / 10.0)}
    numbers.update({f"p/n{i + 1}": PhaseNumbers(cad_p95_frame_ms=[float(v)], ml_images_per_sec=1000 / 10.0)
                    for i, v in enumerate(p95s)})
    assert consolidation_metrics({k: [v] for k, v in numbers.items()}, 50.0, 15.0)["guests_at_qos"] == score


def test_a_slowdown_measured_apart_is_inconclusive_never_a_verdict():
    figures = {"cad_run_time_increase_pct": 1.0, "cad_run_time_increase_pct.ci_low": 0.5,
               "cad_run_time_increase_pct.ci_high": 1.5, "ml_train_time_increase_pct": 2.0,
               "ml_train_time_increase_pct.ci_low": 1.0, "ml_train_time_increase_pct.ci_high": 3.0,
               "ml_train_time_increase_pct.n": 3, "concurrent_vs_sequential": 0.6,
               "concurrent_vs_sequential.ci_low": 0.5, "concurrent_vs_sequential.ci_high": 0.7}
    assert mixed_verdict("p", {**figures, "overlap_pct": 95.0}, 5.0, 15.0)[0] == "consolidate"
    assert mixed_verdict("p", {**figures, "overlap_pct": 40.0}, 5.0, 15.0)[0] == "inconclusive (overlap 40 % < 90 %)"
    alone = PhaseNumbers(ml_images_per_sec=100.0)
    step = PhaseNumbers(cad_p95_frame_ms=[1.0], ml_images_per_sec=99.0, overlap_pct=12.0)
    assert qos(step, alone, 50.0, 15.0) == (False, overlap_shortfall(12.0))


def test_an_interval_across_the_threshold_is_inconclusive_not_a_miss():
    # make study on a quiet host (cfed7fc): both medians meet the rule, the CAD interval straddles 5 %
    said, sentence = mixed_verdict("m60-8q", figures((4.5, -1.7, 8.4), (3.5, -7.3, 12.6)), 5.0, 15.0)
    assert said.startswith("inconclusive (CI ±") and "CAD straddles its limit" in said and "n=3" in said
    assert said in sentence and "does not meet" not in sentence
    said, _ = mixed_verdict("m60-4q", figures((-2.1, -5.1, 2.5), (2.5, -10.8, 20.6)), 5.0, 15.0)
    assert said.startswith("inconclusive") and "ML straddles its limit" in said


def test_a_verdict_is_given_where_the_intervals_carry_it():
    said, _ = mixed_verdict("m60-8q", figures((21.0, 6.2, 31.1), (687.4, 645.9, 731.5)), 5.0, 15.0)
    assert said == DOES_NOT_MEET
    said, sentence = mixed_verdict("m60-1q", figures((1.0, 0.2, 2.0), (5.0, 2.0, 9.0)), 5.0, 15.0)
    assert said == CONSOLIDATE and "(median of 3 per-repeat ratios)" in sentence
    said, _ = mixed_verdict("m60-1q", {"cad_run_time_increase_pct": 1.0, "ml_train_time_increase_pct": 2.0,
                                       "concurrent_vs_sequential": 0.8}, 5.0, 15.0)
    assert said == "inconclusive (n=1: no spread)"  # one repeat carries no verdict


def test_slowdown_intervals_stay_within_their_bounds():
    # three repeats of a loaded host (the cfed7fc mixed run: ML +2.5 [-495.2, +785.6] from a t interval of %)
    alone = [PhaseNumbers(makespan_s=5.0, cad_run_time_s=5.0, cad_frame_s=0.05, ml_images_per_sec=1000 / t)
             for t in (10.0, 4.0, 2.0)]
    mixed = [PhaseNumbers(makespan_s=8.0, cad_run_time_s=c, cad_frame_s=c / 100, ml_images_per_sec=1000 / t)
             for c, t in ((5.5, 4.0), (4.0, 9.0), (6.0, 12.0))]
    out = by_profile({"p/cad": alone, "p/mixed": mixed, "p/ml": alone})
    lo, hi = out["p.ml_train_time_increase_pct.ci_low"], out["p.ml_train_time_increase_pct.ci_high"]
    assert -100.0 < lo < out["p.ml_train_time_increase_pct"] < hi and out["p.ml_train_time_increase_pct.n"] == 3
    said, _ = mixed_verdict("p", {k[2:]: v for k, v in out.items()}, 5.0, 15.0)
    assert said.startswith("inconclusive")


# --- a consolidation curve is a curve -----------------------------------------------------------------------------
def test_a_consolidation_sweep_goes_two_steps_past_its_first_qos_miss(monkeypatch):
    from suites.run import mixed as study_mod
    from tests.support.helpers import compose_config

    cfg = compose_config("scenario=consolidation", "profile=m60-2q", "scenario.mixed.max_guests=8",
                         "scenario.repeats=1")
    run = study_mod.MixedRun(cfg)
    slowdowns = {"m60-2q/ml": 10.0, "m60-2q/n1": 10.5, "m60-2q/n2": 20.0, "m60-2q/n3": 40.0, "m60-2q/n4": 60.0}
    monkeypatch.setattr(study_mod, "numbers", lambda label: study_mod.PhaseNumbers(
        cad_p95_frame_ms=[20.0] if label != "m60-2q/ml" else [], ml_images_per_sec=1000 / slowdowns[label]))
    going = [run.keep_going(label, label) for label in slowdowns]  # the label stands in for its outcome
    # n1 meets QoS (+5 %), n2 misses it (+100 %): the sweep goes on through n3 and n4, then ends (cfed7fc: at n2)
    assert going == [True, True, True, True, False]
    assert run.first_miss == "m60-2q/n2" and run.counts_past_miss() == 2
    assert run.stop_reason().startswith("QoS missed at n2: ML slowdown 100.0 % > 15 %; 2 count(s) measured past it")
    curve = study_mod.consolidation_metrics(run.numbers, 100.0, 15.0)
    assert curve["guests_at_qos"] == 1 and [curve[f"n{n}.meets_qos"] for n in (1, 2, 3, 4)] == [1, 0, 0, 0]


def test_a_consolidation_step_runs_its_repeats_in_a_row_and_one_missing_tile_fails_it(monkeypatch):
    """scenario.repeats (default 3) for a consolidation: each count's repeats in a row, judged once all are in; a
    repeat that misses QoS fails the step (VMmark's rule), and says which repeat."""
    from suites.run import mixed as study_mod
    from tests.support.helpers import compose_config

    cfg = compose_config("scenario=consolidation", "profile=m60-2q", "scenario.mixed.max_guests=3",
                         "scenario.mixed.counts_past_miss=0")
    assert cfg.scenario.phase_repeats == 3
    run = study_mod.MixedRun(cfg)
    rates = {"m60-2q/ml": [100.0] * 3, "m60-2q/n1": [99.0, 98.0, 97.0], "m60-2q/n2": [95.0, 50.0, 96.0]}
    calls = iter([(label, i) for label in rates for i in range(3)])
    monkeypatch.setattr(study_mod, "numbers", lambda _: (lambda label, i: study_mod.PhaseNumbers(
        cad_p95_frame_ms=[20.0] if label != "m60-2q/ml" else [], ml_images_per_sec=rates[label][i]))(*next(calls)))
    going = [run.keep_going(label, None) for label in rates for _ in range(3)]
    assert going == [True] * 8 + [False]  # n2 judged only after its third repeat
    assert run.verdicts["m60-2q/n2"] == (False, "ML slowdown 100.0 % > 15 % (repeat 2/3)")
    curve = study_mod.consolidation_metrics(run.numbers, 100.0, 15.0)
    assert curve["guests_at_qos"] == 1 and curve["n2.repeats"] == 3
    from suites.record.reader import MixedReport
    from suites.render.mixed_report import consolidation_headline

    said = consolidation_headline(MixedReport(consolidation=curve, validity={"m60-2q/n1": "emulated"}))
    assert said == "1 CAD guest(s) per GPU at QoS (n=3 per count, every repeat at QoS)"
    assert curve["n1.ml_slowdown_pct"] == pytest.approx(100 / 98 * 100 - 100)  # the median repeat's


def test_an_inconclusive_count_is_said_as_no_verdict_never_as_a_qos_miss():
    """A first-time administrator read 'phase m60-1q/n4 missed QoS (inconclusive (host busy ...))' and 'stopped:
    QoS missed at n1: inconclusive': a count with no verdict is no measured miss (docs/sizing.md)."""
    from suites.pipeline.orchestrate import said_miss
    from suites.run.mixed import miss_words

    busy = "inconclusive (host busy: other processes 140 % of a core > host_busy_pct=25)"
    assert miss_words(busy) == "no verdict" and said_miss(busy) == busy
    assert said_miss("ML slowdown 100.0 % > 15 %") == "missed QoS (ML slowdown 100.0 % > 15 %)"
