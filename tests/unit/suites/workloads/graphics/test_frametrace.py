"""Tests of ``suites/workloads/graphics/frametrace.py``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from suites.workloads.graphics import frametrace, scene, viewsets


def _doc(name: str = "product") -> dict:
    return json.loads(frametrace.trace_path(name).read_text())


def _mutate(fn):  # a named scenario: the document after one bad edit
    doc = _doc()
    fn(doc)
    return json.dumps(doc)


MALFORMED = {  # scenario: (file text, what the one line must say)
    "truncated": (frametrace.trace_path("product").read_text()[:5000], "truncated or not JSON"),
    "empty-file": ("", "truncated or not JSON"),
    "not-a-trace": (json.dumps({"hello": 1}), "not a frame trace"),
    "future-version": (_mutate(lambda d: d.update(version=2)), "format version 2 is not supported"),
    "frames-dropped": (_mutate(lambda d: d["tests"][0]["frames"].pop()), "frame_count says 96"),
    "part-out-of-range": (_mutate(lambda d: d["tests"][1]["frames"][3].update(opaque=[[0, 99]])),
                          "tests[1].frames[3].opaque: part index out of range"),
    "unknown-mode": (_mutate(lambda d: d["tests"][0].update(mode="raytraced")),
                     "tests[0].mode: unknown mode (known: shaded, wire-on-shaded, textured)"),
    "bad-eye": (_mutate(lambda d: d["tests"][0]["frames"][0].update(eye=[1, 2])),
                "tests[0].frames[0].eye: expected list of 3 finite numbers"),
    # checked on suites/schemas/frame_trace.json: one line naming the field, in the schema's words (never the value)
    "weight-not-a-number": (_mutate(lambda d: d["tests"][0].update(weight="heavy\u001b[8m")),
                            "tests[0].weight: must be a finite number > 0"),
    "frames-missing": (_mutate(lambda d: d["tests"][1].pop("frames")), "tests[1]: missing 'frames'"),
    "fov-too-wide": (_mutate(lambda d: d["tests"][0]["frames"][2].update(fov_deg=400)),
                     "tests[0].frames[2].fov_deg: must be in [1, 170]"),
    "transparent-not-ids": (_mutate(lambda d: d["tests"][0]["frames"][0].update(transparent=["all"])),
                            "tests[0].frames[0].transparent[0]: bad entry: expected part indices"),
    "eye-not-numbers": (_mutate(lambda d: d["tests"][0]["frames"][0].update(eye="far")), "expected list"),
    "unknown-generator": (_mutate(lambda d: d["scene"].update(generator="teapot")), "unknown generator 'teapot'"),
    "parts-mismatch": (_mutate(lambda d: d["scene"].update(parts=9)), "but generator 'product' builds 8"),
    "checksum-frame-outside": (_mutate(lambda d: d["tests"][0].update(checksum_frames=[48])), "checksum_frames"),
    # hostile traces: each would be accepted, or exhaust memory or the stack, without its check
    "huge-part-range": (_mutate(lambda d: d["tests"][0]["frames"][0].update(opaque=[[0, 2000000000]])),
                        "opaque: part index out of range 0..7: [0, 2000000000]"),
    "nan-explode": (_mutate(lambda d: d["tests"][0]["frames"][0].update(explode=float("nan"))),
                    "explode: must be a finite factor"),
    "eye-at-target": (_mutate(lambda d: d["tests"][0]["frames"][0].update(eye=d["tests"][0]["frames"][0]["target"])),
                      "the camera has no view direction"),
    "infinite-weight": (_mutate(lambda d: d["tests"][0].update(weight=float("inf"))),
                        "weight: must be a finite number > 0, got inf"),
    "nested-too-deeply": ("[" * 100_000 + "]" * 100_000, "nested too deeply to be a trace"),
}


# --- traces and scenes -------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(viewsets.VIEWSETS))
def test_shipped_trace_is_what_the_recorder_writes(name: str):
    shipped = frametrace.trace_path(name).read_text()
    assert shipped == viewsets.dumps(viewsets.record(name)), "re-run: python -m suites.workloads.graphics record"
    trace = frametrace.load(frametrace.trace_path(name))
    assert trace.frame_count == 48 * len(trace.tests) and trace.parts == len(scene.parts(trace.generator, trace.seed))


def test_oversized_trace_is_refused_before_it_is_read(tmp_path: Path):
    path = tmp_path / "product.json"
    with path.open("wb") as f:
        f.truncate(frametrace.MAX_TRACE_BYTES + 1)  # sparse: nothing written, nothing to read
    with pytest.raises(frametrace.TraceFormatError, match="more than 67108864"):
        frametrace.load(path)


@pytest.mark.parametrize("name", sorted(MALFORMED))
def test_malformed_trace_is_rejected_with_its_place(tmp_path: Path, name: str):
    text, expected = MALFORMED[name]
    path = tmp_path / "product.json"
    path.write_text(text)
    with pytest.raises(frametrace.TraceFormatError) as err:
        frametrace.load(path)
    assert expected in str(err.value) and "\n" not in str(err.value)
