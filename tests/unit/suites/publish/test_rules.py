"""Tests of ``suites/publish/rules.py``: each run rule on a document built as make publish builds one; a figure,
interval, ratio or configuration edited by hand does not recompute from the bundle's own raw repeats."""

from __future__ import annotations

import copy
import json

import pytest

from suites.bundle.archive import dumps
from suites.publish import rules
from suites.publish.document import document
from suites.publish.reference import reference_document
from tests.support.bundles import comparison

FIGURES = {"1-gpu / mnist-torch train s": [10.0, 11.0, 12.0], "cpu / mnist-torch train s": [100.0, 104.0, 98.0]}


def clean() -> dict:
    rf = comparison(FIGURES)
    return json.loads(dumps(document(rf, "python -m suites bench scenario=gpu-vs-cpu", [], "gpu-vs-cpu")))


def failing(doc: dict) -> list[str]:
    return [v.rule for v in rules.judge(doc) if v.ok is False]


def test_a_full_size_quiet_enforced_unmodified_run_with_three_repeats_is_compliant():
    verdicts = rules.judge(clean())
    assert rules.verdict_of(verdicts) == rules.COMPLIANT, [v for v in verdicts if v.ok is False]
    assert {v.rule for v in verdicts if v.ok is None} == {"overlap", "conclusive answer"}


@pytest.mark.parametrize("edit, rule", [
    (lambda d: d["figures"][0]["summary"].update(median=9.0), "figures recompute"),
    (lambda d: d["figures"][0]["summary"].update(high=d["figures"][0]["summary"]["high"] * 0.9), "figures recompute"),
    (lambda d: d["figures"][1]["values"].__setitem__(0, 50.0), "figures recompute"),  # its summary no longer holds
    (lambda d: d["ratios"][0]["summary"].update(median=20.0), "figures recompute"),
    (lambda d: d["setup"].update({"workload.step_ms": "1"}), "figures recompute"),  # the configuration's hash
    (lambda d: [f["values"].pop() for f in d["figures"]], "repeats"),
    (lambda d: d["setup"].update(scale="smoke"), "full size"),
    (lambda d: d["marks"].update({"host busy": "host busy in 3 of 6 runs: other processes: 90 % of a core"}),
     "clean host"),
    (lambda d: d["system"].update(enforcement="not enforced"), "profile enforced"),
    (lambda d: d["suite"].update(commit="0123-dirty", modified=True), "unmodified suite"),
    (lambda d: d["marks"].update({"failed in 1 of 6 runs": "g1 died"}), "every run complete"),
])
def test_each_rule_fails_on_what_it_guards(edit, rule: str):
    doc = clean()
    edit(doc)
    assert rule in failing(doc)
    assert rules.verdict_of(rules.judge(doc)).startswith("not compliant: ")


def test_a_mixed_run_whose_windows_overlapped_too_little_fails_overlap_and_a_sizing_must_be_conclusive():
    doc = clean()
    doc["run"]["scenario"] = "mixed"
    assert "overlap" not in failing(doc)
    doc["marks"]["inconclusive"] = "inconclusive: the guests' timed windows overlapped 40 % < 90 %"
    assert failing(doc) == ["overlap"]
    sizing = copy.deepcopy(clean())
    sizing["run"]["kind"], sizing["figures"], sizing["ratios"] = "sizing", [], []
    sizing["answers"] = {"inconclusive": "1 repeat(s) at 1 CAD guest(s): no interval"}
    assert "conclusive answer" in failing(sizing) and "repeats" not in failing(sizing)


def test_a_published_result_is_said_to_be_published_never_judged():
    verdicts = rules.judge(reference_document())
    assert [v.rule for v in verdicts] == ["published"] and rules.verdict_of(verdicts) == rules.PUBLISHED


@pytest.mark.parametrize("edit, rule, says", [
    # round 7 (issue 87): each judged compliant on fa8ae96
    (lambda d: [f.update(validity="not enforced") for f in d["figures"]] and d["system"].update(
        enforcement="enforced", gpu="no GPU", gpu_count="0"), "profile enforced",
     "the bundle declares 'enforced', its figures say 'not enforced'"),
    (lambda d: d["run"].update(status="KILLED") or d.update(figures=[], ratios=[]), "every run complete",
     "the run ended KILLED, not FINISHED"),
    (lambda d: d.update(figures=[], ratios=[]), "every run complete", "a comparison run with no figure"),
    (lambda d: d["run"].update(status="FAILED"), "every run complete", "the run ended FAILED"),
    (lambda d: d["suite"].update(commit=""), "unmodified suite", "commit '': the suite's own version is not known"),
    (lambda d: d["suite"].update(commit="0123456789ab-dirty", modified=False), "unmodified suite",
     "the bundle says modified=False, its commit says otherwise"),
    (lambda d: d.update(origin="published"), "origin", "says 'published' but is not the reference study"),
])
def test_the_rules_judge_what_the_figures_show_not_what_the_bundle_says(edit, rule: str, says: str):
    doc = clean()
    edit(doc)
    [verdict] = [v for v in rules.judge(doc) if v.rule == rule]
    assert verdict.ok is False and says in verdict.reason, verdict


def test_a_forged_published_bundle_is_judged_as_measured_and_fails():
    """Round 7: origin 'published' skipped every rule (check-results exit 0) and the catalog listed the forgery beside
    the reference study, its ratio '25 [24, 26] n=30' unmarked. Only the reference study this suite ships is
    published; an edited copy of it is not."""
    forged = copy.deepcopy(reference_document())
    forged["ratios"][0]["summary"].update(median=25.0, low=24.0, high=26.0, n=30)
    verdicts = rules.judge(forged)
    assert verdicts[0].rule == "origin" and rules.verdict_of(verdicts).startswith("not compliant: origin")
    assert rules.is_reference(reference_document()) and not rules.is_reference(forged)


def test_repeats_that_overflow_the_statistics_do_not_recompute_and_raise_nothing():
    doc = clean()
    doc["figures"][0]["values"] = [1e300, 1e300, 1e300]  # past the reader's cap; here the rule itself must hold
    assert "figures recompute" in failing(doc)


def test_a_verdicts_lines_fit_120_columns_its_reason_folded_under_itself():
    doc = clean()
    doc["marks"]["failed in 1 of 6 runs"] = "g1 died: " + "a long reason of many words " * 12
    lines = "\n".join(rules.verdict_lines(rules.judge(doc))).splitlines()
    assert max(map(len, lines)) <= 120 and any(line.startswith(" " * 30) for line in lines)
