"""Graphics replay: real frames through EGL (llvmpipe here), pixel checks, malformed traces, the cap."""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path

import pytest

from suites.errors import BenchError
from suites.workloads.graphics import frame_checks as checks
from suites.workloads.graphics import frametrace, renderer, viewsets
from suites.workloads.graphics.__main__ import replay_here
from tests.support.cifar_files import bench_run
from tests.support.graphics import golden_with_a_wrong_frame
from tests.support.helpers import run_bench

FAST = ["workload=graphics-replay", "workload.frames_per_test=9", "progress=quiet"]


def replay(tmp_path: Path | None = None, **kw: object) -> tuple[object, dict[str, float]]:
    args = argparse.Namespace(viewsets=kw.pop("viewsets", list(viewsets.VIEWSETS)), size="small", frames=9)
    return replay_here(args, verify=True, golden_dir=str(tmp_path) if tmp_path else None)


def test_truncated_trace_stops_the_bench_before_any_guest(tmp_path: Path):
    traces = tmp_path / "traces"
    shutil.copytree(frametrace.TRACE_DIR, traces)
    (traces / "mechanical.json").write_text(frametrace.trace_path("mechanical").read_text()[:3000])
    run = run_bench(tmp_path, *FAST, f"workload.trace_dir={traces}")
    lines = [ln for ln in run.proc.stderr.splitlines() if ln.strip()]
    assert run.proc.returncode == 2 and len(lines) == 1, run.proc.stderr
    assert lines[0].startswith("error: frame trace") and "mechanical.json is truncated" in lines[0]
    assert not list(run.run_dir.glob("g*.log"))


# --- rendering and pixel checks -------------------------------------------------------------
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


def test_wrong_pixels_are_reported_and_strict_mode_fails(tmp_path: Path):
    gold, key = golden_with_a_wrong_frame(tmp_path)
    w, m = replay(gold, viewsets=["product"])
    bad = [v for v in w.verdicts["product"] if not v.ok]
    assert [v.key for v in bad] == [key] and bad[0].status in ("mismatch", "beyond-tolerance")
    assert bad[0].diff_pct is not None and bad[0].diff_pct > 1.0
    assert m["product.pixels_ok"] == 0.0 and m["pixels_ok"] == 0.0
    assert w.ctx.info["product.pixels"]["failed"][0].startswith(key)
    w.cfg.strict = True
    with pytest.raises(BenchError, match="pixel check failed"):
        w.evaluate()


def test_viewset_over_the_profile_framebuffer_fails_with_the_numbers(tmp_path: Path):
    run = run_bench(tmp_path, *FAST, "profile=m60-1q", "workload.resolution=[8192,8192]", "workload.samples=8",
                    "workload.viewsets=[product]")
    assert run.proc.returncode == 1, run.proc.stderr[-2000:]
    (guest,) = run.results["guests"]
    assert guest["result"]["status"] == "failed"
    assert "viewset product at size small needs 4" in guest["result"]["error"]
    assert "exceeds profile framebuffer 1024 MiB" in guest["result"]["error"]


def test_no_egl_is_a_failed_result_with_one_line(tmp_path: Path):
    run = run_bench(tmp_path, *FAST, "workload.libegl=libEGL_absent.so.1")
    assert run.proc.returncode == 1
    error = run.results["guests"][0]["result"]["error"]
    assert "no EGL OpenGL context (libEGL_absent.so.1 not loaded)" in error and "\n" not in error


def test_bench_prints_viewsets_and_records_them(tmp_path: Path):
    import mlflow

    run = run_bench(tmp_path, *FAST)
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


def test_a_pixel_mismatch_is_status_mismatch_in_results_table_and_mlflow(tmp_path: Path):
    """strict=false still reports the run, but a wrong picture is never an `ok` viewset."""
    import json

    import mlflow

    from tests.support.graphics import golden_with_a_wrong_frame

    gold, _ = golden_with_a_wrong_frame(tmp_path)
    proc = bench_run(tmp_path, "workload=graphics-replay", "workload.frames_per_test=8", "progress=quiet",
                 "workload.viewsets=[product,architecture]", f"workload.golden_dir={gold}", timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    guest = json.loads((tmp_path / "run" / "results.json").read_text())["guests"][0]
    assert guest["result"]["info"]["product.status"] == "mismatch"
    assert guest["result"]["info"]["architecture.status"] == "ok"
    row = next(ln for ln in proc.stdout.splitlines() if "│ product" in ln)
    assert "mismatch" in row and "│ ok" not in row
    mlflow.set_tracking_uri(f"sqlite:///{tmp_path / 'mlflow.db'}")
    runs = mlflow.search_runs(experiment_names=["gpu-mixed-bench"])
    child = runs[runs["tags.bench.role"] == "guest"].iloc[0]
    assert child["tags.bench.viewset.product"] == "mismatch" and child["tags.bench.pixels"] == "mismatch"
    assert child["tags.bench.viewset.architecture"] == "ok"
