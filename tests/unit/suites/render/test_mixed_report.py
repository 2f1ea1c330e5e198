"""Tests of ``suites/render/mixed_report.py``."""

from __future__ import annotations

import math

from rich.console import Console

from suites.record.reader import MixedReport
from suites.render import mixed_report
from suites.run import marks
from suites.run.mixed import PhaseNumbers, consolidation_metrics, qos
from suites.validity import NOT_ENFORCED


def steps(**alone: object) -> dict[str, PhaseNumbers]:
    return {"m60-8q/ml": PhaseNumbers(**{"ml_images_per_sec": 100.0, **alone}),  # type: ignore[arg-type]
            "m60-8q/n1": PhaseNumbers(cad_p95_frame_ms=[20.0], ml_images_per_sec=95.0),
            "m60-8q/n2": PhaseNumbers(cad_p95_frame_ms=[30.0], ml_images_per_sec=90.0)}


def report(numbers: dict[str, PhaseNumbers], busy_pct: float = 25.0, scale: str = "full") -> MixedReport:
    rep = MixedReport(consolidation=consolidation_metrics({k: [v] for k, v in numbers.items()}, 50.0, 15.0, busy_pct),
                      consolidation_profile="m60-8q", validity={k: NOT_ENFORCED for k in numbers})
    rep.marks["consolidation"] = marks.marks_of(numbers, busy_pct, scale)
    return rep


def mixed_rep(verdict_busy: bool = True) -> MixedReport:
    figures = {"cad_run_time_increase_pct": 3.0, "ml_train_time_increase_pct": 4.0, "concurrent_vs_sequential": 0.8,
               "host_other_cpu_pct": 143.0 if verdict_busy else 0.0}
    return MixedReport(mixed={"m60-8q": figures}, validity={"m60-8q/cad": NOT_ENFORCED, "m60-8q/mixed": NOT_ENFORCED},
                       references={"m60-8q": "CAD < 5 %, ML < 15 % slower; consolidate"},
                       qos={"host_busy_pct": 25.0})


def test_a_clean_consolidation_is_a_score_with_no_mark():
    rep = report(steps())
    assert rep.consolidation["guests_at_qos"] == 2 and rep.consolidation["inconclusive"] == 0
    assert mixed_report.consolidation_headline(rep) == \
        "2 CAD guest(s) beside the ML guest (no GPU: not a per-GPU figure) at QoS (n=1: no spread)"
    assert marks.tags_of([]) == {}


def test_a_busy_host_in_any_phase_makes_the_score_inconclusive_in_the_headline_table_report_and_tags():
    """Every phase said 'host busy'; the headline '0 CAD guest(s) ... at QoS', its table, report.md and MLflow's
    guests_at_qos carried no mark."""
    rep = report(steps(host_other_cpu_pct=143.0))
    headline = mixed_report.consolidation_headline(rep)
    assert headline.startswith("inconclusive, ") and "host busy in 1 of 3 phase(s) (other processes up to 143 % " \
        "of a core > host_busy_pct=25)" in headline
    assert rep.consolidation["inconclusive"] == 1.0
    assert [row[-1] for row in mixed_report.consolidation_rows(rep)] == ["inconclusive", "inconclusive"]
    assert headline in mixed_report.markdown(rep, [])
    tags = marks.tags_of(marks.marks_of(steps(host_other_cpu_pct=143.0), 25.0))
    assert tags["bench.host_busy"].startswith("host busy in 1 of 3") and "bench.inconclusive" in tags


def test_a_score_built_on_a_guest_without_a_rate_is_not_a_score():
    numbers = steps(ml_images_per_sec=math.nan, ml_rate_blank=1)
    assert qos(numbers["m60-8q/n1"], numbers["m60-8q/ml"], 50.0, 15.0) == \
        (False, "inconclusive (ML rate blank: its timed window too short for a rate)")  # was 'nan % > 15 %'
    rep = report(numbers)
    assert rep.consolidation["inconclusive"] == 1.0
    assert "ML rate blank in m60-8q/ml" in mixed_report.consolidation_headline(rep)


def test_a_smoke_run_and_a_missed_target_are_said_beside_the_score():
    numbers = steps(ml_missed="test accuracy 8.59% < target 99%")
    rep = report(numbers, scale="smoke")
    headline = mixed_report.consolidation_headline(rep)
    assert rep.consolidation["guests_at_qos"] == 2 and not headline.startswith("inconclusive")
    assert "marked: ML guest missed its target in 1 phase(s) (m60-8q/ml: test accuracy 8.59% < target 99%); " \
        "+preset=smoke: a seconds-long check of the machinery, not a measurement" in headline


def test_the_reference_column_is_shown_only_beside_phases_that_had_their_gpu():
    rep = mixed_rep()
    assert mixed_report.spread_cells(rep, "m60-8q", "x")["reference study (2 x M60)"] == "- (no GPU: not comparable)"
    rep.validity = {"m60-8q/cad": "enforced", "m60-8q/mixed": "enforced"}
    assert mixed_report.spread_cells(rep, "m60-8q", "x")["reference study (2 x M60)"].startswith("CAD < 5 %")


def test_verdict_cells_never_break_inside_a_number_or_a_key_value():
    console = Console(width=120, record=True, file=open("/dev/null", "w"))  # noqa: SIM115
    for table in mixed_report.mixed_console_tables(mixed_rep()):
        console.print(table)
    text = console.export_text()
    assert "host_busy_pct=25)" in text, text  # it read 'host_busy_pct=2' / '5))': a threshold of 2
    assert max(len(line) for line in text.splitlines()) <= 120


def test_a_qos_count_says_it_is_one_run_and_per_gpu_only_with_a_gpu():
    from suites.record.reader import MixedReport
    from suites.render.mixed_report import consolidation_headline
    from suites.validity import ENFORCED, NOT_ENFORCED

    rep = MixedReport(consolidation={"guests_at_qos": 1.0}, validity={"m60-2q/n1": NOT_ENFORCED})
    assert consolidation_headline(rep) == ("1 CAD guest(s) beside the ML guest (no GPU: not a per-GPU figure) at QoS "
                                           "(n=1: no spread)")
    rep.validity = {"m60-2q/n1": ENFORCED}
    assert consolidation_headline(rep) == "1 CAD guest(s) per GPU at QoS (n=1: no spread)"


def test_the_reference_studys_finding_is_a_table_of_its_own_and_nothing_is_cut_at_120_columns():
    """cce1a94's verdict table ran past 120 columns with the reference column, and the console cut it off."""
    rep = mixed_rep()
    rep.validity = {"m60-8q/cad": "enforced", "m60-8q/mixed": "enforced"}
    console = Console(width=120, record=True, file=open("/dev/null", "w"))  # noqa: SIM115
    tables = mixed_report.mixed_console_tables(rep)
    for table in tables:
        console.print(table)
    text = console.export_text()
    finding = mixed_report.spread_cells(rep, "m60-8q", "x")["reference study (2 x M60)"]
    titles = [t.title.split(": ", 1)[1] for t in tables][:2]
    assert titles == ["the verdict (from the MLflow store; medians over the repeats)",
                      "the reference study's finding (2 x M60)"]
    assert " ".join(finding.split()) in " ".join(text.replace("│", " ").split())  # whole, if folded
    assert all(len(line.rstrip()) <= 120 for line in text.splitlines())


def test_a_count_an_interrupt_cut_off_is_no_verdict_in_the_table_never_a_miss():
    """First-time administrator: `make report`'s consolidation table showed `│ 2 │ - │ - │ 97 │ no │` for a count an
    interrupt cut off (its guests failed): a count not measured whole is no QoS miss (docs/sizing.md)."""
    from suites.run.mixed import miss_words

    cut = {**steps(), "m60-8q/n2": PhaseNumbers(failed=2, failed_guests=["g0", "g1"], host_cpu_pct=97.0)}
    rows = mixed_report.consolidation_rows(report(cut))
    assert [row[-1] for row in rows] == ["yes", "no verdict: 2 guest(s) failed"]
    ok, why = qos(cut["m60-8q/n2"], cut["m60-8q/ml"], 50.0, 15.0)
    assert not ok and miss_words(why) == "no verdict"


def test_the_reports_tables_never_break_a_word_or_a_number_and_scroll_when_wider_than_the_page():
    """Round 7: at 1,100 px the mixed report's ~20 columns read "inconclusiv e", "+481. 9" (a fixed layout with
    overflow-wrap:anywhere). A cell now wraps at no point inside its text, and a wide table scrolls on its own."""
    import re

    from suites.render.markdown import REPORT_STYLE, to_html

    page = to_html("| a | b |\n|---|---|\n| inconclusive (n=1: no spread) | +481.9 [-93.8, +17136.3] |\n",
                   REPORT_STYLE)
    style = re.search(r"<style>(.*)</style>", page).group(1)
    assert "anywhere" not in style and "table-layout:fixed" not in style
    assert "td{white-space:nowrap}" in style and "overflow-x:auto" in style
