"""Frame traces: what a viewset draws, frame by frame, as a versioned JSON file.

Format ``gpu-mixed-bench/frame-trace``, version 1 (one file per viewset)::

    {"format": "gpu-mixed-bench/frame-trace", "version": 1,
     "viewset": "mechanical", "description": "...",
     "scene": {"generator": "mechanical", "seed": 1, "parts": 120},
     "frame_count": 144,                      # sum of the tests' frames: a truncated file fails
     "tests": [{"name": "shaded", "weight": 0.35,
                "mode": "shaded" | "wire-on-shaded" | "textured",
                "checksum_frames": [0, 7],     # frames (within the test) whose pixels are checked
                "frames": [{"eye": [x, y, z], "target": [x, y, z], "fov_deg": 40.0,
                            "explode": 0.0,    # 0..1: parts move along their explode vector
                            "opaque": [[0, 119]],   # inclusive part-index ranges, drawn in order
                            "transparent": [1]}]}]} # blended after the opaque pass, back to front

The scene's geometry is not in the file: ``scene.generator`` and ``seed``
rebuild it (suites/workloads/graphics/scene.py), and the size preset only
changes tessellation, so one trace serves every size. Every frame is one
draw list plus the state changes its mode implies; replay is deterministic.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

from gpu_probe.shapes import Json
from suites import json_rules
from suites.errors import DataError
from suites.workloads.graphics import scene as scene_mod

FORMAT, VERSION = "gpu-mixed-bench/frame-trace", 1
TRACE_DIR = Path(__file__).resolve().parent / "traces"


MAX_TRACE_BYTES = 64 * 1024 * 1024  # the shipped traces are ~100 KB; anything this large is not one
MAX_EXPLODE = 10.0  # exploded views move parts out by at most this many times their offset


class TraceFormatError(DataError):
    """A frame trace that cannot be replayed as written."""


@dataclass(frozen=True)
class Frame:
    eye: tuple[float, float, float]
    target: tuple[float, float, float]
    fov_deg: float
    explode: float
    opaque: tuple[int, ...]
    transparent: tuple[int, ...]


@dataclass(frozen=True)
class Test:
    name: str
    weight: float
    mode: str
    checksum_frames: tuple[int, ...]
    frames: tuple[Frame, ...]


@dataclass(frozen=True)
class FrameTrace:
    viewset: str
    generator: str
    seed: int
    parts: int
    tests: tuple[Test, ...]
    path: str = ""

    @property
    def frame_count(self) -> int:
        return sum(len(t.frames) for t in self.tests)


def _fail(where: str, message: str) -> None:
    raise TraceFormatError(f"{where}: {message}")


def _vec3(v: list[float], where: str) -> tuple[float, float, float]:
    if not all(math.isfinite(x) for x in v):
        _fail(where, "expected 3 finite numbers")
    return (float(v[0]), float(v[1]), float(v[2]))


def _parts(raw: list[Json], key: str, where: str, n_parts: int) -> tuple[int, ...]:
    """Part ids; ``opaque`` holds [first, last] ranges, ``transparent`` plain ids."""
    ids: list[int] = []
    for item in raw:
        span = item if key == "opaque" else [item, item]
        if span[0] > span[1]:  # type: ignore[index,operator]
            _fail(f"{where}.{key}", f"bad entry {item!r}")
        if span[0] < 0 or span[1] >= n_parts:  # type: ignore[index,operator]  # before expanding: [0, 2000000000]
            _fail(f"{where}.{key}", f"part index out of range 0..{n_parts - 1}: {item!r}")
        ids.extend(range(span[0], span[1] + 1))  # type: ignore[index,operator]
    return tuple(ids)


def _frame(obj: dict[str, Json], where: str, n_parts: int) -> Frame:
    fov, explode = float(obj["fov_deg"]), float(obj["explode"])  # type: ignore[arg-type]
    if not math.isfinite(explode):  # a NaN passes every bound of the schema
        _fail(f"{where}.explode", f"must be a finite factor in [0, {MAX_EXPLODE:g}], got {explode}")
    eye, target = _vec3(obj["eye"], f"{where}.eye"), _vec3(obj["target"], f"{where}.target")  # type: ignore[arg-type]
    if math.dist(eye, target) < 1e-6:  # no view direction: a degenerate camera renders nothing meaningful
        _fail(f"{where}.eye", f"is the target {target}: the camera has no view direction")
    return Frame(eye, target, fov, explode, _parts(obj["opaque"], "opaque", where, n_parts),  # type: ignore[arg-type]
                 _parts(obj["transparent"], "transparent", where, n_parts))  # type: ignore[arg-type]


def _test(obj: dict[str, Json], where: str, n_parts: int) -> Test:
    weight = float(obj["weight"])  # type: ignore[arg-type]
    if not math.isfinite(weight):
        _fail(f"{where}.weight", f"must be a finite number > 0, got {weight}")
    frames = tuple(_frame(f, f"{where}.frames[{i}]", n_parts) for i, f in enumerate(obj["frames"]))  # type: ignore
    checks = obj["checksum_frames"]
    if not all(i < len(frames) for i in checks):  # type: ignore[union-attr,operator]
        _fail(f"{where}.checksum_frames", f"must be frame indices 0..{len(frames) - 1}")
    return Test(str(obj["name"]), weight, str(obj["mode"]), tuple(checks), frames)  # type: ignore[arg-type]


def parse(doc: Json, where: str = "trace") -> FrameTrace:
    """Validate a decoded trace document: its format and version, then its schema (suites/schemas/frame_trace.json),
    then what a schema cannot say; every problem names its place in the file."""
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        _fail(where, f"not a frame trace (format must be {FORMAT!r})")
    version = doc.get("version")  # type: ignore[union-attr]
    if isinstance(version, int) and version != VERSION:
        _fail(where, f"format version {version} is not supported (this suite reads version {VERSION})")
    problem = json_rules.first_problem("frame_trace", doc)
    if problem is not None:
        at, said = problem
        _fail(f"{where}.{at}" if at else where, said)
    scene = doc["scene"]  # type: ignore[index]
    if scene["generator"] not in scene_mod.GENERATORS:  # type: ignore[index]
        _fail(f"{where}.scene.generator", f"unknown generator {scene['generator']!r} (known: "  # type: ignore[index]
              f"{', '.join(scene_mod.GENERATORS)})")
    n_parts = int(scene["parts"])  # type: ignore[index,arg-type]
    tests = tuple(_test(t, f"{where}.tests[{i}]", n_parts) for i, t in enumerate(doc["tests"]))  # type: ignore
    trace = FrameTrace(str(doc["viewset"]), str(scene["generator"]), int(scene["seed"]),  # type: ignore[index,arg-type]
                       n_parts, tests)
    declared = doc["frame_count"]  # type: ignore[index]
    if declared != trace.frame_count:
        _fail(where, f"frame_count says {declared} but the tests hold {trace.frame_count} frames (truncated?)")
    return trace


def load(path: str | Path) -> FrameTrace:
    """Read and validate one trace file; a missing, truncated or malformed file is one TraceFormatError."""
    p = Path(path)
    try:
        size = p.stat().st_size
        if size > MAX_TRACE_BYTES:
            raise TraceFormatError(f"frame trace {p} is {size} bytes, more than {MAX_TRACE_BYTES} (not a trace?)")
        doc = json.loads(p.read_text())
    except FileNotFoundError:
        raise TraceFormatError(f"frame trace {p} does not exist") from None
    except RecursionError:
        raise TraceFormatError(f"frame trace {p} is nested too deeply to be a trace") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise TraceFormatError(f"frame trace {p} cannot be read: {exc}") from None
    except json.JSONDecodeError as exc:
        raise TraceFormatError(f"frame trace {p} is truncated or not JSON ({exc.msg} at line {exc.lineno} "
                               f"column {exc.colno})") from None
    trace = parse(doc, where=f"frame trace {p.name}")
    built = len(scene_mod.parts(trace.generator, trace.seed))
    if built != trace.parts:  # the trace was recorded against another version of the generator
        _fail(f"frame trace {p.name}.scene.parts", f"{trace.parts}, but generator {trace.generator!r} builds {built}")
    return FrameTrace(trace.viewset, trace.generator, trace.seed, trace.parts, trace.tests, str(p))


def trace_path(viewset: str, trace_dir: str | Path | None = None) -> Path:
    return Path(trace_dir or TRACE_DIR) / f"{viewset}.json"


def known_viewsets(trace_dir: str | Path | None = None) -> list[str]:
    return sorted(p.stem for p in Path(trace_dir or TRACE_DIR).glob("*.json"))
