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
