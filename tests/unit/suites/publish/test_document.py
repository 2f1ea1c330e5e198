"""Tests of ``suites/publish/document.py``: a run as a bundle's document, nothing local in it, each phase's figure
over its baseline named as the reference study's are."""

from __future__ import annotations

import json

import pytest

from gpu_probe.stats import confidence_interval
from suites.bundle.archive import check_document, dumps
from suites.publish.document import LEFT_OUT, document, public_setup, ratios_of
from suites.publish.reference import reference_document
from tests.support.bundles import SETUP, comparison


def test_nothing_local_leaves_with_the_setup_and_credentials_never_do():
    got = public_setup(SETUP)
    assert got["host.hostname"] == got["data.root"] == got["note"] == LEFT_OUT
    assert "tracking_uri" not in got and "artifact_dir" not in got and "scenario.study.cad.workload" not in got
    assert got["workload.step_ms"] == "5" and got["host.gpu_names"] == "NVIDIA H200"
    text = json.dumps(document(comparison({"cpu / mnist-torch train s": [1.0, 1.1, 1.2]}),
                               "python -m suites bench scenario=gpu-vs-cpu", [], "gpu-vs-cpu"))
    assert "alice" not in text and "s3cret" not in text and "lab-node-7" not in text


def test_a_document_holds_every_figures_repeats_its_interval_and_validity_and_is_on_the_schema():
    rf = comparison({"1-gpu / mnist-torch train s": [10.0, 11.0, 12.0], "cpu / mnist-torch train s": [100, 104, 98]})
    doc = json.loads(dumps(document(rf, "python -m suites bench", [], "gpu-vs-cpu")))
    check_document(doc, "test")
    fig = doc["figures"][0]
    iv = confidence_interval([10.0, 11.0, 12.0])
    assert fig["values"] == [10.0, 11.0, 12.0] and fig["summary"]["n"] == 3 and fig["summary"]["method"] == "t"
    assert (fig["summary"]["low"], fig["summary"]["high"]) == (iv.low, iv.high) and fig["validity"] == "emulated"
    assert fig["window"].startswith("each repeat's seconds")
    assert doc["system"]["gpu"] == "NVIDIA H200" and doc["system"]["enforcement"] == "emulated"
    assert doc["suite"]["modified"] is False and doc["suite"]["libraries"] == {"torch": "2.14.1"}
    (ratio,) = doc["ratios"]
    assert ratio["name"] == "gpu-vs-cpu: cpu vs 1-gpu: mnist-torch train s"
    assert 8.5 < ratio["summary"]["median"] < 9.5 and ratio["summary"]["low"] < ratio["summary"]["median"]


def test_a_measured_ratio_is_named_as_the_reference_studys_so_the_catalog_sets_them_side_by_side():
    measured = ratios_of([{"name": "cpu / mnist-torch train s", "values": [10.0], "higher_is_better": False},
                          {"name": "1-gpu / mnist-torch train s", "values": [1.0], "higher_is_better": False}],
                         "1-gpu", "gpu-vs-cpu")
    published = {r["name"] for r in reference_document()["ratios"]}
    assert [r["name"] for r in measured] == ["gpu-vs-cpu: cpu vs 1-gpu: mnist-torch train s"]
    assert measured[0]["name"] in published


def test_a_mixed_phases_baseline_is_the_phase_that_ran_alone():
    figs = [{"name": f"{p} / {w}", "values": [v], "higher_is_better": True}
            for p, w, v in (("m60-8q/cad", "graphics-replay fps", 60.0),
                            ("m60-8q/mixed", "graphics-replay fps", 57.0),
                            ("m60-8q/mixed", "mnist-torch images/s", 900.0),
                            ("m60-8q/ml", "mnist-torch images/s", 1000),
                            ("m60-8q/cad", "makespan s", 6.8), ("m60-8q/ml", "makespan s", 36.0))]
    names = sorted(r["name"] for r in ratios_of(figs, "", "mixed"))  # no makespan: ML alone is not CAD's work
    assert names == ["mixed: m60-8q/mixed vs m60-8q/cad: graphics-replay fps",
                     "mixed: m60-8q/mixed vs m60-8q/ml: mnist-torch images/s"]


def test_a_studys_figures_are_set_over_their_parts_baselines_each_named_by_its_part():
    figs = [{"name": f"gpu-vs-cpu / {p} / mnist-torch train s", "values": [v], "higher_is_better": False}
            for p, v in (("1-gpu", 1.0), ("cpu", 10.0))]
    (ratio,) = ratios_of(figs, "", "study")
    assert ratio["name"] == "gpu-vs-cpu: cpu vs 1-gpu: mnist-torch train s"
    assert ratio["summary"]["median"] == pytest.approx(10.0)


def test_what_a_run_said_keeps_its_words_but_not_this_machines_paths():
    from suites.publish.document import scrub

    assert scrub("g1 died: see /tmp/alice/run/g1.log (exit 9); store https://u:pw@h/x") == \
        "g1 died: see <path> (exit 9); store https://***@h/x"
