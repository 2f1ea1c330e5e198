"""Figures a user can trust on the first run (issue 38): verdicts only where the interval carries them, rates only
from a window that carries them, a missed target said. Recorded figures and step timings: no process started."""

from __future__ import annotations

import io
import math

import pytest

from gpu_probe.stats import ratio_interval
from suites.run.mixed import CONSOLIDATE, DOES_NOT_MEET, PhaseNumbers, by_profile, mixed_verdict


def figures(cad: tuple[float, float, float], ml: tuple[float, float, float],
            ratio: tuple[float, float, float] = (0.90, 0.85, 0.95), n: int = 3) -> dict[str, float]:
    out: dict[str, float] = {}
    for key, (v, lo, hi) in (("cad_run_time_increase_pct", cad), ("ml_train_time_increase_pct", ml),
                             ("concurrent_vs_sequential", ratio)):
        out.update({key: v, f"{key}.ci_low": lo, f"{key}.ci_high": hi, f"{key}.n": float(n)})
    return out


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
    alone = [PhaseNumbers(makespan_s=5.0, cad_run_time_s=5.0, ml_images_per_sec=1000 / t) for t in (10.0, 4.0, 2.0)]
    mixed = [PhaseNumbers(makespan_s=8.0, cad_run_time_s=c, ml_images_per_sec=1000 / t)
             for c, t in ((5.5, 4.0), (4.0, 9.0), (6.0, 12.0))]
    out = by_profile({"p/cad": alone, "p/mixed": mixed, "p/ml": alone})
    lo, hi = out["p.ml_train_time_increase_pct.ci_low"], out["p.ml_train_time_increase_pct.ci_high"]
    assert -100.0 < lo < out["p.ml_train_time_increase_pct"] < hi and out["p.ml_train_time_increase_pct.n"] == 3
    said, _ = mixed_verdict("p", {k[2:]: v for k, v in out.items()}, 5.0, 15.0)
    assert said.startswith("inconclusive")


def test_a_ratio_interval_is_that_of_the_ratios_geometric_mean():
    iv = ratio_interval([0.5, 2.0])
    assert iv.mean == pytest.approx(1.0) and iv.low > 0 and iv.method == "log-bootstrap"
    assert math.isnan(ratio_interval([1.3]).low) and ratio_interval([1.3]).median == 1.3


# --- every rate from a window that can carry it -----------------------------------------------------------------
def metered(step_s: list[float], warmup: int, images: int = 512, min_steps: int = 20, min_s: float = 0.25):
    """A StepMeter fed recorded step durations on a clock of its own (no sleeping)."""
    from suites.workloads import base

    clock = [100.0]
    real = base.time.perf_counter
    base.time.perf_counter = lambda: clock[0]
    try:
        meter = base.StepMeter(warmup, len(step_s), min_steps=min_steps, min_s=min_s)
        meter.start()
        for dt in step_s:
            clock[0] += dt
            meter.step(images)
        return meter, meter.finish()
    finally:
        base.time.perf_counter = real


def test_one_timed_step_gives_no_rate_and_says_why():
    # the README command on cfed7fc: 11 steps, 10 of them warm-up, 1.23 s in all; its cell said 7,707 images/s
    meter, out = metered([0.4] + [0.07] * 9 + [0.0664], warmup=10)
    assert math.isnan(out["images_per_sec"]) and meter.blank_reason == "1 timed step < 20"
    assert out["timed_steps"] == 1 and out["train_time_s"] == pytest.approx(1.0964)
    _, out = metered([0.001] * 40, warmup=5)  # 35 steps, but 35 ms: too short a window for a rate
    assert math.isnan(out["images_per_sec"])


def test_a_steady_rate_reconciles_with_images_over_train_time_through_the_warm_up():
    from suites.render.tables import rate_gap

    meter, out = metered([0.5] + [0.1] * 9 + [0.1] * 36, warmup=10)
    assert meter.blank_reason == "" and out["timed_steps"] == 36 and out["timed_s"] == pytest.approx(3.6)
    assert out["images_per_sec"] == pytest.approx(36 * 512 / 3.6)
    note = rate_gap(out)  # 5,120 steady vs 46 x 512 / 4.5 s = 5,234 overall: within 10 %, no note
    assert note == ""
    meter, out = metered([3.0] + [0.1] * 45, warmup=10)  # a slow first step (start-up) inside the warm-up
    note = rate_gap(out)
    assert "steady state over 36 timed steps (3.60 s)" in note and "warm-up took 3.90 s (52% of train s)" in note


# --- a missed target is never a silent ok ------------------------------------------------------------------------
def test_a_missed_target_is_said_in_the_cell_and_a_note():
    from types import SimpleNamespace

    from suites.render.tables import result_notes, target_mark
    from suites.run.outcome import missed_target

    m = {"test_accuracy": 0.289, "target_accuracy": 0.99, "target_met": 0.0}
    assert target_mark("test_accuracy", m) == " < 99%" and target_mark("images_per_sec", m) == ""
    assert missed_target(m) == "test accuracy 28.90% < target 99%"
    assert missed_target({**m, "test_accuracy": 0.995, "target_met": 1.0}) == ""
    # over repeats, one repeat that missed is a miss (an olympic mean of 1, 1, 0 reads 1)
    assert missed_target({**m, "target_met": 1.0, "target_met.min": 0.0, "test_accuracy.min": 0.5})
    guest = SimpleNamespace(spec=SimpleNamespace(guest_id="g0"),
                            result=SimpleNamespace(metrics=m, info={}, ok=True))
    notes = result_notes(SimpleNamespace(guests=[guest]))
    assert notes == ["note: g0: missed its target: test accuracy 28.90% < target 99% (strict=true makes this a "
                     "failure)"]


# --- every console table fits 120 columns -------------------------------------------------------------------------
@pytest.mark.e2e
def test_every_console_table_fits_120_columns():
    from rich.console import Console

    from suites.commands.gpu_check import table as gpu_table
    from suites.gpucheck.checks import CHECKS, Row
    from suites.render import mixed_report as report
    from suites.render import tables

    from .test_plots import LONG, outcome, phases, study

    rows = phases()
    for r in rows:
        r.reference, r.throughput_verdict = "train time 10.06x; CPU 43 % vs 8 %", "inconclusive (CI ±48.6 %, n=3; " \
            "~211 repeats would settle it)"
    no_gpu = "skipped: no GPU: NVML unavailable (NVML Shared Library Not Found)"
    rendered = [tables.results_table(outcome(), "single: 6 x m60-8q running cifar10-torch " + LONG),
                tables.comparison_table(rows, "scaling: cifar10-torch, normalised to 1-gpu " + LONG),
                *report.console_tables(study()), gpu_table([Row(c, no_gpu) for c in CHECKS], "gpu-check " + LONG)]
    for t in rendered:
        out = Console(width=tables.console_width(), record=True, file=io.StringIO())
        out.print(t)
        lines = out.export_text().splitlines()
        assert max(len(line) for line in lines) <= 120, "\n".join(lines)
    # the gpu-check table on a host without a GPU: one short row per check, the reason once under it
    out = Console(width=120, record=True, file=io.StringIO())
    out.print(rendered[-1])
    text = out.export_text()
    assert text.count("NVML unavailable") == 1 and len(text.splitlines()) <= len(CHECKS) + 8


def test_the_console_is_never_wider_than_120_columns(monkeypatch):
    from suites.render import tables

    monkeypatch.setenv("COLUMNS", "245")  # cfed7fc printed 245-column tables whatever COLUMNS said
    assert tables.console_width() == 120  # off a terminal (pytest captures stdout): a log's width
    monkeypatch.setattr(tables.sys.stdout, "isatty", lambda: True)
    assert tables.console_width() == 120
    monkeypatch.setenv("COLUMNS", "100")
    assert tables.console_width() == 100  # a narrower terminal is followed


# --- a consolidation curve is a curve -----------------------------------------------------------------------------
def test_a_consolidation_sweep_goes_two_steps_past_its_first_qos_miss(monkeypatch):
    from suites.run import mixed as study_mod

    from .helpers import compose_config

    cfg = compose_config("scenario=consolidation", "profile=m60-2q", "scenario.study.max_guests=8",
                         "scenario.repeats=1")
    run = study_mod.MixedRun(cfg)
    slowdowns = {"m60-2q/ml": 10.0, "m60-2q/n1": 10.5, "m60-2q/n2": 20.0, "m60-2q/n3": 40.0, "m60-2q/n4": 60.0}
    monkeypatch.setattr(study_mod, "numbers", lambda label: study_mod.PhaseNumbers(
        cad_p95_frame_ms=[20.0] if label != "m60-2q/ml" else [], ml_images_per_sec=1000 / slowdowns[label]))
    going = [run.keep_going(label, label) for label in slowdowns]  # the label stands in for its outcome
    # n1 meets QoS (+5 %), n2 misses it (+100 %): the sweep goes on through n3 and n4, then ends (cfed7fc: at n2)
    assert going == [True, True, True, True, False]
    assert run.first_miss == "m60-2q/n2" and run.steps_past_miss() == 2
    assert run.stop_reason().startswith("QoS missed at n2: ML slowdown 100.0 % > 15 %; 2 step(s) measured past it")
    curve = study_mod.consolidation_metrics(run.numbers, 100.0, 15.0)
    assert curve["guests_at_qos"] == 1 and [curve[f"n{n}.meets_qos"] for n in (1, 2, 3, 4)] == [1, 0, 0, 0]


def test_a_consolidation_step_runs_its_repeats_in_a_row_and_one_missing_tile_fails_it(monkeypatch):
    """scenario.repeats (default 3) for a consolidation: each step's repeats in a row, judged once all are in; a
    repeat that misses QoS fails the step (VMmark's rule), and says which repeat."""
    from suites.run import mixed as study_mod

    from .helpers import compose_config

    cfg = compose_config("scenario=consolidation", "profile=m60-2q", "scenario.study.max_guests=3",
                         "scenario.study.steps_past_miss=0")
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
    assert said == "1 CAD guest(s) per GPU at QoS (n=3 per step, every repeat at QoS)"
    assert curve["n1.ml_slowdown_pct"] == pytest.approx(100 / 98 * 100 - 100)  # the median repeat's


def test_a_consolidation_sizes_its_guests_from_the_host_where_the_profile_does_not_fit(monkeypatch):
    from types import SimpleNamespace

    from suites.config import compose

    from .helpers import compose_config

    monkeypatch.setattr(compose.psutil, "virtual_memory", lambda: SimpleNamespace(total=24105 * 2**20))
    cfg = compose_config("scenario=consolidation", "profile=m60-2q", "scenario.study.max_guests=8")
    size, note = compose.consolidation_memory(cfg)
    assert size == 2304 and "9 guests x 8192 MiB (profile m60-2q) > 24105 MiB host memory" in note
    phases = compose.mixed_phases(cfg)
    assert len(phases) == 9 and all("profile.memory_MiB=2304" in p.overrides for p in phases)
    assert compose.consolidation_memory(compose_config("scenario=consolidation", "profile=m60-2q"))[0] == 4096
    assert compose.consolidation_memory(compose_config("scenario=consolidation", "profile=m60-2q",
                                                       "profile.memory_MiB=2048"))[0] is None  # fits as it is


def test_a_qos_count_says_it_is_one_run_and_per_gpu_only_with_a_gpu():
    from suites.record.reader import MixedReport
    from suites.render.mixed_report import consolidation_headline
    from suites.validity import ENFORCED, NOT_ENFORCED

    rep = MixedReport(consolidation={"guests_at_qos": 1.0}, validity={"m60-2q/n1": NOT_ENFORCED})
    assert consolidation_headline(rep) == ("1 CAD guest(s) beside the ML guest (no GPU: not a per-GPU figure) at QoS "
                                           "(n=1: no spread)")
    rep.validity = {"m60-2q/n1": ENFORCED}
    assert consolidation_headline(rep) == "1 CAD guest(s) per GPU at QoS (n=1: no spread)"


def test_a_phases_images_per_second_sums_the_guests_that_train():
    from types import SimpleNamespace

    from suites.run.compare import total_images_per_sec

    def guest(metrics: dict[str, float]) -> SimpleNamespace:
        return SimpleNamespace(result=SimpleNamespace(metrics=metrics))

    # a consolidation step: a CAD guest (no image rate) beside the ML guest; its row read '-' on 6e20b60
    step = SimpleNamespace(ok_guests=[guest({"images_per_sec": math.nan}), guest({"images_per_sec": 599.6})])
    assert total_images_per_sec(step) == 599.6
    assert math.isnan(total_images_per_sec(SimpleNamespace(ok_guests=[guest({"images_per_sec": math.nan})])))
