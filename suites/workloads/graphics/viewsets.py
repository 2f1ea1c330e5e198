"""The suite's viewsets and the recorder that writes their frame traces.

A viewset (as in SPECviewperf) is one model plus several tests, each a
rendering mode over a camera path with a weight in the composite score.
``python -m suites.workloads.graphics record`` regenerates traces/*.json from
the definitions below; replay reads only the trace files.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from gpu_probe.shapes import JsonObject
from suites.workloads.graphics import frametrace, scene

FRAMES_PER_TEST = 48
CHECKSUM_FRAMES = [0, 7]  # early, so short CI replays still check pixels


@dataclass(frozen=True)
class TestDef:
    name: str
    weight: float
    mode: str
    transparency: bool = False  # draw transparent parts (else they are hidden)
    explode: tuple[float, float] = (0.0, 0.0)  # explode factor at first and last frame
    sweep_deg: float = 180.0  # camera orbit over the test
    elevation: float = 0.45  # camera height over the orbit radius


@dataclass(frozen=True)
class ViewsetDef:
    name: str
    description: str
    generator: str
    seed: int
    tests: tuple[TestDef, ...]


VIEWSETS = {v.name: v for v in (
    ViewsetDef("mechanical", "gearbox assembly, 120 parts: many draw calls, wireframe and an exploded x-ray view",
               "mechanical", 1, (
                   TestDef("shaded", 0.35, "shaded"),
                   TestDef("wire-on-shaded", 0.35, "wire-on-shaded", elevation=0.8),
                   TestDef("exploded-xray", 0.30, "shaded", transparency=True, explode=(0.0, 1.0)))),
    ViewsetDef("architecture", "four-storey frame, 64 parts: textured concrete and brick, blended glass",
               "architecture", 2, (
                   TestDef("textured", 0.5, "textured", sweep_deg=120),
                   TestDef("textured-glass", 0.5, "textured", transparency=True, sweep_deg=240, elevation=0.25))),
    ViewsetDef("product", "consumer product, 8 smooth high-poly parts: few, heavy draw calls",
               "product", 3, (
                   TestDef("shaded", 0.6, "shaded", sweep_deg=360),
                   TestDef("wire-on-shaded", 0.4, "wire-on-shaded", sweep_deg=90, elevation=1.2))),
)}


def _ranges(ids: list[int]) -> list[list[int]]:
    out: list[list[int]] = []
    for i in ids:
        if out and out[-1][1] == i - 1:
            out[-1][1] = i
        else:
            out.append([i, i])
    return out


def _frame(parts: list[scene.Solid], test: TestDef, k: int, centre: Any, radius: float) -> JsonObject:
    t = k / (FRAMES_PER_TEST - 1)
    angle = np.radians(30.0 + test.sweep_deg * t)
    dist = radius * (1.7 - 0.4 * np.sin(np.pi * t))  # a slow dolly in and out
    eye = centre + dist * np.array([np.cos(angle), np.sin(angle), test.elevation])
    explode = test.explode[0] + (test.explode[1] - test.explode[0]) * t
    opaque = [i for i, p in enumerate(parts) if not p.transparent]
    glass = [i for i, p in enumerate(parts) if p.transparent] if test.transparency else []

    def depth(i: int) -> float:
        pos = np.asarray(parts[i].position) + explode * np.asarray(parts[i].explode)
        return float(np.linalg.norm(pos - eye))

    glass.sort(key=depth, reverse=True)  # back to front, as an application sorts for blending
    return {"eye": [round(float(x), 4) for x in eye], "target": [round(float(x), 4) for x in centre],
            "fov_deg": 40.0, "explode": round(float(explode), 4), "opaque": _ranges(opaque), "transparent": glass}


def record(name: str) -> JsonObject:
    """The trace document of one viewset: deterministic, so re-recording changes nothing."""
    vs = VIEWSETS[name]
    parts = scene.parts(vs.generator, vs.seed)
    centre, radius = scene.bounds(parts)
    tests = [{"name": t.name, "weight": t.weight, "mode": t.mode, "checksum_frames": CHECKSUM_FRAMES,
              "frames": [_frame(parts, t, k, centre, radius) for k in range(FRAMES_PER_TEST)]} for t in vs.tests]
    return {"format": frametrace.FORMAT, "version": frametrace.VERSION, "viewset": name,
            "description": vs.description,
            "scene": {"generator": vs.generator, "seed": vs.seed, "parts": len(parts)},
            "frame_count": FRAMES_PER_TEST * len(tests), "tests": tests}


def dumps(doc: JsonObject) -> str:
    """One frame per line: diffable, and small enough to ship."""
    head = {k: v for k, v in doc.items() if k != "tests"}
    lines = [json.dumps(head)[:-1] + ', "tests": [']
    for ti, test in enumerate(doc["tests"]):
        meta = {k: v for k, v in test.items() if k != "frames"}
        lines.append(" " + json.dumps(meta)[:-1] + ', "frames": [')
        frames = [f"  {json.dumps(f)}" for f in test["frames"]]
        lines.append(",\n".join(frames))
        lines.append(" ]}" + ("," if ti < len(doc["tests"]) - 1 else ""))
    lines.append("]}")
    return "\n".join(lines) + "\n"


def write_all(trace_dir: str | Path = frametrace.TRACE_DIR) -> list[Path]:
    out = []
    for name in VIEWSETS:
        path = frametrace.trace_path(name, trace_dir)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(dumps(record(name)))
        out.append(path)
    return out
