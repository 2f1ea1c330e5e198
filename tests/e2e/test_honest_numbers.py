"""Honest results: every figure says what it measured (validity), how sure it is (n, CI, verdict), and when."""

from __future__ import annotations

import time
from pathlib import Path

from PIL import Image

from tests.support.helpers import SMOKE, mlflow_client, run_bench


def runs(uri: str) -> list:
    client = mlflow_client(uri)
    exp = client.get_experiment_by_name("gpu-mixed-bench")
    return client.search_runs([exp.experiment_id], max_results=1000, order_by=["attributes.start_time ASC"])


def test_comparison_repeats_interleave_and_every_ratio_carries_its_spread(tmp_path: Path):
    t0 = time.time()
    run = run_bench(tmp_path, *SMOKE, "scenario=gpu-vs-cpu", "scenario.repeats=null")  # a comparison's default: 3
    wall = time.time() - t0
    assert run.proc.returncode == 0, run.proc.stderr[-2000:]
    out = run.proc.stdout
    assert "NOT A GPU MEASUREMENT: phase(s) 1-gpu ran with the profile not enforced" in out  # the banner
    assert "x base [95% CI]" in out and "verdict" in out and "(3 repeat(s) each, interleaved)" in out
    # both arms ran on the CPU: said, and the reference's GPU figures are not shown beside them
    assert "note: both arms on the CPU: not a GPU-vs-CPU comparison" in out
    assert "reference study (M60)" not in out and "10.06x" not in out
    all_runs = runs(run.tracking_uri)
    phases = [r for r in all_runs if r.data.tags.get("bench.role") == "scenario"]
    assert [r.data.tags["bench.phase"] for r in phases] == ["1-gpu", "cpu"] * 3  # A B A B A B
    assert [r.data.tags["bench.repeat"] for r in phases] == ["1", "1", "2", "2", "3", "3"]
    assert [r.data.tags["bench.validity"] for r in phases] == ["not enforced", "enforced"] * 3
    comparison = next(r for r in all_runs if r.data.tags.get("bench.role") == "comparison")
    m, tags = comparison.data.metrics, comparison.data.tags
    assert m["cpu.n"] == 3 and m["cpu.throughput_x.ci_low"] <= m["cpu.throughput_x"] <= m["cpu.throughput_x.ci_high"]
    assert tags["bench.verdict.cpu.throughput"].startswith(("faster", "slower", "within noise", "inconclusive (CI ±"))
    assert tags["bench.validity"] == "not enforced" and tags["bench.validity.cpu"] == "enforced"
    assert comparison.data.params["reference.cpu"] == "train time 10.06x; CPU 43 % vs 8 %"
    png = Image.open(run.run_dir / "comparison.png")
    assert "not enforced" in png.text["Description"]
    for r in phases:  # recorded after the fact, with the run's own start and end: Duration is real
        duration = (r.info.end_time - r.info.start_time) / 1000
        assert r.data.metrics["makespan_s"] <= duration < wall, (duration, wall)


def test_one_repeat_says_no_spread(tmp_path: Path):
    run = run_bench(tmp_path, *SMOKE, "scenario=passthrough-vs-vgpu")
    assert run.proc.returncode == 0, run.proc.stderr[-2000:]
    assert "no spread" in run.proc.stdout and "NOT A GPU MEASUREMENT: every phase" in run.proc.stdout


def test_strict_refuses_an_unenforced_profile_before_anything_starts(tmp_path: Path):
    run = run_bench(tmp_path, *SMOKE, "scenario=scaling", "strict=true", fresh_store=True)
    lines = [ln for ln in run.proc.stderr.splitlines() if ln.strip()]
    assert run.proc.returncode == 2 and len(lines) == 1, run.proc.stderr
    assert lines[0].startswith("error: strict=true: phase 1-gpu: profile passthrough-1gpu is not enforced")
    assert not list(run.run_dir.glob("**/g*.log")) and not (tmp_path / "mlflow.db").exists()
