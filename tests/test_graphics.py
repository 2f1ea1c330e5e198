"""Graphics replay: real frames through EGL (llvmpipe here), pixel checks, malformed traces, the cap."""

from __future__ import annotations

import argparse
import json
import math
import shutil
from pathlib import Path

import numpy as np
import pytest

from suites.errors import BenchError
from suites.workloads.graphics import frame_checks as checks
from suites.workloads.graphics import frametrace, renderer, scene, viewsets
from suites.workloads.graphics.__main__ import replay_here
from suites.workloads.graphics.replay import composite, frame_stats

from .helpers import run_bench

FAST = ["workload=graphics-replay", "workload.frames_per_test=9", "progress=quiet"]


def replay(tmp: Path | None = None, **kw: object) -> tuple[object, dict[str, float]]:
    args = argparse.Namespace(viewsets=kw.pop("viewsets", list(viewsets.VIEWSETS)), size="small", frames=9)
    return replay_here(args, verify=True, golden_dir=str(tmp) if tmp else None)


# --- traces and scenes -------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(viewsets.VIEWSETS))
def test_shipped_trace_is_what_the_recorder_writes(name: str):
    shipped = frametrace.trace_path(name).read_text()
    assert shipped == viewsets.dumps(viewsets.record(name)), "re-run: python -m suites.workloads.graphics record"
    trace = frametrace.load(frametrace.trace_path(name))
    assert trace.frame_count == 48 * len(trace.tests) and trace.parts == len(scene.parts(trace.generator, trace.seed))


@pytest.mark.parametrize("size", ["small", "medium"])
def test_scene_meets_its_triangle_budget(size: str):
    target = scene.SIZES[size][0]
    for vs in viewsets.VIEWSETS.values():
        tris = sum(m.triangles for m in scene.meshes(scene.parts(vs.generator, vs.seed), target))
        assert 0.8 * target <= tris <= 1.05 * target, (vs.name, tris)


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
    "unknown-mode": (_mutate(lambda d: d["tests"][0].update(mode="raytraced")), "unknown mode 'raytraced'"),
    "bad-eye": (_mutate(lambda d: d["tests"][0]["frames"][0].update(eye=[1, 2])), "eye: expected 3 finite"),
    "eye-not-numbers": (_mutate(lambda d: d["tests"][0]["frames"][0].update(eye="far")), "expected list"),
    "unknown-generator": (_mutate(lambda d: d["scene"].update(generator="teapot")), "unknown generator 'teapot'"),
    "parts-mismatch": (_mutate(lambda d: d["scene"].update(parts=9)), "but generator 'product' builds 8"),
    "checksum-frame-outside": (_mutate(lambda d: d["tests"][0].update(checksum_frames=[48])), "checksum_frames"),
    # hostile traces (issue 15): each used to be accepted, or to exhaust memory or the stack before a check
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


@pytest.mark.e2e
def test_truncated_trace_stops_the_bench_before_any_guest(tmp: Path):
    traces = tmp / "traces"
    shutil.copytree(frametrace.TRACE_DIR, traces)
    (traces / "mechanical.json").write_text(frametrace.trace_path("mechanical").read_text()[:3000])
    run = run_bench(tmp, *FAST, f"workload.trace_dir={traces}", timeout=60)
    lines = [ln for ln in run.proc.stderr.splitlines() if ln.strip()]
    assert run.proc.returncode == 2 and len(lines) == 1, run.proc.stderr
    assert lines[0].startswith("error: frame trace") and "mechanical.json is truncated" in lines[0]
    assert not list(run.run_dir.glob("g*.log"))


# --- rendering and pixel checks -------------------------------------------------------------
@pytest.mark.e2e  # trains, renders or waits for real (seconds)
def test_real_frames_render_and_match_their_references():
    w, m = replay()
    assert "llvmpipe" in w.renderer_name or not renderer.is_software(w.gl)
    for vs in viewsets.VIEWSETS:
        verdicts = w.verdicts[vs]
        assert len(verdicts) == 2 * len(viewsets.VIEWSETS[vs].tests)  # frames 0 and 7 of each test
        assert all(v.ok for v in verdicts), [(v.key, v.status, v.diff_pct) for v in verdicts]
        if w.renderer_name in checks.Goldens().table:  # the renderer the references were made with
            assert {v.status for v in verdicts} == {"match"}
        assert m[f"{vs}.pixels_ok"] == 1.0 and m[f"{vs}.frames"] == 7 * len(viewsets.VIEWSETS[vs].tests)
        tests = [m[f"{vs}.{t.name}.fps"] for t in viewsets.VIEWSETS[vs].tests]
        assert min(tests) <= m[f"{vs}.composite_score"] <= max(tests)
        assert m[f"{vs}.frame_time_ms.p50"] <= m[f"{vs}.frame_time_ms.p95"] <= m[f"{vs}.frame_time_ms.p99"]
    assert m["pixels_ok"] == 1.0 and m["triangles_per_sec"] > 0
    assert m["run_time_s"] > sum(7 / m[f"{vs}.fps"] for vs in viewsets.VIEWSETS) * 0.99  # warm-up frames too


def test_reference_frames_show_the_model_not_a_blank_target():
    for png in sorted(checks.GOLDEN_DIR.glob("*.png")):
        import matplotlib.image

        img = matplotlib.image.imread(png)[..., :3]
        background = np.all(np.abs(img - img[0, 0]) < 0.02, axis=-1).mean()
        assert 0.03 < 1 - background < 0.97, f"{png.name}: {1 - background:.1%} of pixels drawn"


def golden_with_a_wrong_frame(tmp: Path) -> tuple[Path, str]:
    """The shipped references, but frame 7 of product/shaded expects another picture: (folder, that frame's key)."""
    gold = tmp / "golden"
    shutil.copytree(checks.GOLDEN_DIR, gold)
    table = json.loads((gold / "checksums.json").read_text())
    key = "product/small/320x240/ms1/shaded#7"
    for digests in table.values():
        digests[key] = "0" * 32
    (gold / "checksums.json").write_text(json.dumps(table))
    png = checks.reference_png(gold, key)  # and a reference image of another frame
    shutil.copy(checks.reference_png(gold, "product/small/320x240/ms1/shaded#0"), png)
    return gold, key


@pytest.mark.e2e  # trains, renders or waits for real (seconds)
def test_wrong_pixels_are_reported_and_strict_mode_fails(tmp: Path):
    gold, key = golden_with_a_wrong_frame(tmp)
    w, m = replay(gold, viewsets=["product"])
    bad = [v for v in w.verdicts["product"] if not v.ok]
    assert [v.key for v in bad] == [key] and bad[0].status in ("mismatch", "beyond-tolerance")
    assert bad[0].diff_pct is not None and bad[0].diff_pct > 1.0
    assert m["product.pixels_ok"] == 0.0 and m["pixels_ok"] == 0.0
    assert w.ctx.info["product.pixels"]["failed"][0].startswith(key)
    w.cfg.strict = True
    with pytest.raises(BenchError, match="pixel check failed"):
        w.evaluate()


def test_cross_renderer_diff_tolerates_edges_but_not_another_frame():
    a = np.zeros((100, 100, 3), np.uint8)
    b = a.copy()
    b[0, :50] = 255  # half a row of edge pixels
    assert checks.diff_pct(a, b) == pytest.approx(0.5)
    b[:, :] += checks.LEVELS  # a uniform shift within the level tolerance
    b[0, :50] = 255
    assert checks.diff_pct(a, b) == pytest.approx(0.5)
    assert checks.diff_pct(a, np.zeros((50, 100, 3), np.uint8)) == 100.0


# --- scores -----------------------------------------------------------------------------------
def test_composite_is_a_weighted_geometric_mean():
    assert composite([(1, 10.0), (1, 40.0)]) == pytest.approx(20.0)
    assert composite([(3, 10.0), (1, 10.0 * 2**4)]) == pytest.approx(20.0)
    assert math.isnan(composite([(1, 10.0), (1, 0.0)])) and math.isnan(composite([]))


def test_frame_stats_are_percentiles_of_frame_times():
    stats = frame_stats([0.010] * 18 + [0.100, 0.200], [], "vs")
    assert stats["vs.frames"] == 20 and stats["vs.fps"] == pytest.approx(20 / 0.48)
    assert stats["vs.frame_time_ms.p50"] == pytest.approx(10.0)
    # linear interpolation between the 19th and 20th of 20 sorted frames (100 and 200 ms)
    assert stats["vs.frame_time_ms.p95"] == pytest.approx(105.0)
    assert stats["vs.frame_time_ms.p99"] == pytest.approx(181.0)
    assert stats["vs.stutter_pct"] == pytest.approx(10.0)  # 2 of 20 frames over twice the 10 ms median
    assert frame_stats([0.010] * 10 + [0.0199], [], "vs")["vs.stutter_pct"] == 0.0  # under twice: no hitch


# --- framebuffer cap and missing EGL: recorded failures, not crashes ---------------------------------
def test_memory_need_counts_buffers_textures_and_targets():
    mesh = scene.Mesh(np.zeros((1024 * 1024 // 24, 6), np.float32), np.zeros(0, np.uint32))
    need = renderer.memory_need([mesh] * 4, True, (1024, 1024), 4, 1024)
    assert need.buffers_MiB == pytest.approx(4, rel=1e-3)
    assert need.textures_MiB == pytest.approx(16 / 3)
    assert need.targets_MiB == pytest.approx(1024 * 1024 * (4 * 8 + 4) / 2**20)


@pytest.mark.e2e
def test_viewset_over_the_profile_framebuffer_fails_with_the_numbers(tmp: Path):
    run = run_bench(tmp, *FAST, "profile=m60-1q", "workload.resolution=[8192,8192]", "workload.samples=8",
                    "workload.viewsets=[product]", timeout=300)
    assert run.proc.returncode == 1, run.proc.stderr[-2000:]
    (guest,) = run.results["guests"]
    assert guest["result"]["status"] == "failed"
    assert "viewset product at size small needs 4" in guest["result"]["error"]
    assert "exceeds profile framebuffer 1024 MiB" in guest["result"]["error"]


@pytest.mark.e2e
def test_no_egl_is_a_failed_result_with_one_line(tmp: Path):
    run = run_bench(tmp, *FAST, "workload.libegl=libEGL_absent.so.1", timeout=300)
    assert run.proc.returncode == 1
    error = run.results["guests"][0]["result"]["error"]
    assert "no EGL OpenGL context (libEGL_absent.so.1 not loaded)" in error and "\n" not in error


@pytest.mark.e2e
def test_bench_prints_viewsets_and_records_them(tmp: Path):
    import mlflow

    run = run_bench(tmp, *FAST, timeout=300)
    assert run.proc.returncode == 0, run.proc.stderr[-2000:]
    out = run.proc.stdout
    assert "graphics viewsets" in out and "composite" in out and "renderer:" in out
    for vs in viewsets.VIEWSETS:
        assert f"│ {vs}" in out
    mlflow.set_tracking_uri(run.tracking_uri)
    df = mlflow.search_runs(experiment_names=["gpu-mixed-bench"])
    child = df[df["tags.bench.role"] == "guest"].iloc[0]
    metrics = run.results["guests"][0]["result"]["metrics"]
    assert child["metrics.mechanical.composite_score"] == pytest.approx(metrics["mechanical.composite_score"])
    assert child["metrics.product.frame_time_ms.p95"] > 0 and child["metrics.pixels_ok"] == 1.0
