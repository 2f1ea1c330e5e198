"""Tests of ``suites/publish/reference.py``: the reference study as a bundle, on the schema, every published figure
of the study planner's in it, marked published."""

from __future__ import annotations

from suites.bundle.archive import check_document
from suites.publish.reference import reference_document
from suites.study.plan import EPISODE_1, MIXED_REFERENCE


def test_the_reference_study_is_a_published_bundle_holding_every_figure_the_study_quotes():
    doc = reference_document()
    check_document(doc, "reference")
    assert doc["origin"] == "published" and doc["figures"] == [] and "not measured by this suite" in doc["title"]
    texts = {r["text"].rsplit(" (", 1)[0] if r["of"] == "" and "(" in r["text"] else r["text"] for r in doc["ratios"]}
    assert {ref.text for part in EPISODE_1 for ref in part.references} <= texts
    assert set(MIXED_REFERENCE.values()) <= texts
    values = {r["name"]: r["summary"]["median"] for r in doc["ratios"]}
    assert values["scaling: 4-gpu vs 1-gpu: cifar10-torch images/s"] == 3.74
    assert values["gpu-vs-cpu: cpu vs 1-gpu: mnist-torch train s"] == 10.06
    assert all(r["summary"]["method"] == "published" and r["summary"]["n"] == 0 for r in doc["ratios"])
