"""Tests of ``suites/json_rules.py``: a document from elsewhere checked on its schema, said in the schema's words."""

from __future__ import annotations

import json

import pytest

from suites import json_rules

DEVICE = {"gpu": "NVIDIA H200", "source": "make gpu-check", "mem_total_MiB": 143771.0, "cuda_context_MiB": 684.0}


@pytest.mark.parametrize("name", ["device", "frame_trace"])
def test_every_schema_is_a_valid_draft_2020_12_schema_with_a_description_of_its_rules(name: str):
    schema = json_rules.schema(name)
    assert schema["$schema"].endswith("2020-12/schema") and schema["description"]
    assert all("description" in rule for rule in schema["properties"].values()), name


def test_a_problem_is_said_by_its_rule_never_by_the_value_it_found():
    forged = {**DEVICE, "gpu": "x" * 3000, "mem_total_MiB": "\u001b[8mlots"}
    said = json_rules.problems("device", forged)
    assert said == ["gpu must be printable text of at most 2,000 characters (it is printed): the GPU's NVML name",
                    "mem_total_MiB must be MiB in (1024, 16777216]"]
    assert not any("xxx" in s or "\u001b" in s for s in said)
    assert json_rules.problems("device", DEVICE) == []
    assert json_rules.problems("device", [DEVICE]) == ["a JSON object is needed, this is a list"]
    assert json_rules.problems("device", {k: v for k, v in DEVICE.items() if k != "source"}) == ["no source"]


def test_a_number_a_schema_cannot_refuse_is_refused_when_it_is_not_finite():
    """A NaN passes every bound in JSON Schema, and Python's json reads NaN and Infinity."""
    for bad in (float("nan"), float("inf")):
        assert json_rules.problems("device", {**DEVICE, "mem_total_MiB": bad}) == \
            ["mem_total_MiB must be MiB in (1024, 16777216]"]
    nested = json.loads('{"b1": {"wall_s": 1, "work_s": NaN, "harness_s": 1}}')
    assert json_rules.problems("device", {**DEVICE, "harness_s": nested})[0].startswith("harness_s must map")


def test_the_first_problem_names_its_place():
    test = {"name": "t", "weight": 1, "mode": "shaded", "checksum_frames": []}
    doc = {"format": "gpu-mixed-bench/frame-trace", "version": 1, "viewset": "v", "frame_count": 1,
           "scene": {"generator": "product", "seed": 1, "parts": 8}, "tests": [test]}
    assert json_rules.first_problem("frame_trace", doc) == ("tests[0]", "missing 'frames'")
    doc["tests"][0]["frames"] = [{"eye": [0, 0, 1], "target": [0, 0, 0], "fov_deg": 40, "explode": 0,
                                  "opaque": [[0, "7"]], "transparent": []}]
    assert json_rules.first_problem("frame_trace", doc) == \
        ("tests[0].frames[0].opaque[0][1]", "bad entry: expected [first, last] part-index ranges")
    doc["tests"][0]["frames"][0]["opaque"] = [[0, 7]]
    assert json_rules.first_problem("frame_trace", doc) is None
