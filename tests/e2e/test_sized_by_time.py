"""Workloads sized by time (suites/workloads/timing.py) in real guests: a window lasts what it was given whatever the
step time, and a pair of guests overlap."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.helpers import run_bench

MIXED_FAST_ML = ["scenario=mixed", "progress=quiet", "scenario.mixed.cad.overrides=['workload.frames_per_test=10']",
                 "scenario.mixed.ml.workload=fixed-step", "profile.memory_MiB=2048", "scenario.repeats=1"]


# --- through the runner -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("step_ms", ["0.5", "50"], ids=["gpu-like-0.5ms", "cpu-like-50ms"])
def test_four_ranks_each_fill_the_window_whatever_the_step_time(tmp_path: Path, step_ms: str):
    run = run_bench(tmp_path, "workload=fixed-step", f"workload.step_ms={step_ms}", "workload.min_window_s=1",
                    "workload.ranks=4", "progress=quiet")
    assert run.proc.returncode == 0, run.proc.stderr[-2000:]
    result = json.loads((run.run_dir / "results.json").read_text())["guests"][0]["result"]
    info, m = result["info"], result["metrics"]
    assert info["ranks"] == 4 and info["sized_by"] == "time" and m["steps"] == info["sized_steps"]  # lockstep
    assert m["timed_s"] >= 1.0 and m["images_per_sec"] > 0 and m["images"] == m["steps"] * 128 * 4


@pytest.mark.parametrize("ml,overlapped", [
    ("['workload.step_ms=0.5','workload.min_window_s=0.5','workload.until_stopped=true']", True),
    ("['workload.step_ms=0.5','workload.min_window_s=0.25']", False)], ids=["until-stopped", "short"])
def test_the_mixed_ml_guest_trains_for_the_cad_replay_or_the_slowdown_is_inconclusive(tmp_path: Path, ml: str,
                                                                                    overlapped: bool):
    run = run_bench(tmp_path, *MIXED_FAST_ML, f"scenario.mixed.ml.overrides={ml}")
    assert run.proc.returncode == 0, run.proc.stderr[-3000:]
    mixed = json.loads((run.run_dir / "m60-8q-mixed" / "results.json").read_text())
    overlap = mixed["host_metrics"]["overlap_pct"]
    assert mixed["host_metrics"]["overlap_pct.g0.g1"] == overlap
    report = (run.run_dir / "report" / "report.md").read_text()
    if overlapped:
        assert overlap >= 90 and "inconclusive (overlap" not in report
    else:
        assert overlap < 90 and f"inconclusive (overlap {overlap:.0f} % < 90 %)" in report


def test_a_comparison_of_phases_sized_by_time_gives_the_time_ratio_of_equal_work(tmp_path: Path):
    """5 ms and 50 ms steps, each phase sized to its window: the time ratio is the step-time ratio (10x), labelled
    time per image, not the ratio of the two windows (2.70 on cce1a94: the floor of 20 steps bound the slow one)."""
    import csv

    phases = ("scenario.phases=[{label:fast,overrides:['workload.step_ms=5']},"
              "{label:slow,overrides:['workload.step_ms=50']}]")
    run = run_bench(tmp_path, "scenario=gpu-vs-cpu", "workload=fixed-step", "+preset=smoke", phases,
                    "scenario.baseline=fast", "progress=quiet")
    assert run.proc.returncode == 0, run.proc.stderr[-3000:]
    rows = {r["label"]: r for r in csv.DictReader((run.run_dir / "comparison.csv").open())}
    assert rows["slow"]["time_basis"] == "time per image"
    assert 8.0 <= float(rows["slow"]["time_x"]) <= 12.0, rows["slow"]
    assert "s/image x base" in run.proc.stdout and "sized by time" in " ".join(run.proc.stdout.split())


def test_a_cad_replay_at_gpu_frame_rates_covers_the_ml_window(tmp_path: Path):
    """A pass of 4 frames per test at 64x64 lasts a fraction of a second, as a viewset does at an H200's frame
    rates (0.05-0.35 s): beside the open-ended ML guest (a 1.5 s window) it replays for that window, so the two
    overlap >= 90 % (on cce1a94 one pass ended long before the ML window: ~20-60 %)."""
    gpu_speed_cad = "scenario.mixed.cad.overrides=['workload.frames_per_test=4','workload.resolution=[64,64]']"
    ml = ("scenario.mixed.ml.overrides=['workload.step_ms=0.5','workload.min_window_s=1.5',"
          "'workload.until_stopped=true']")
    run = run_bench(tmp_path, *MIXED_FAST_ML, gpu_speed_cad, ml)
    assert run.proc.returncode == 0, run.proc.stderr[-3000:]
    mixed = json.loads((run.run_dir / "m60-8q-mixed" / "results.json").read_text())
    cad, ml_guest = (g["result"] for g in mixed["guests"])
    assert cad["info"]["replay_passes"] > 1 and "min_replay_s=1.5" in cad["info"]["replay_sized"]
    assert mixed["host_metrics"]["overlap_pct"] >= 90, mixed["host_metrics"]
    assert ml_guest["info"]["window_s"] == 1.5 and "sized_steps" not in ml_guest["info"]  # what it aimed at
    alone = json.loads((run.run_dir / "m60-8q-cad" / "results.json").read_text())["guests"][0]["result"]["info"]
    assert alone["replay_passes"] == 1  # CAD alone: one pass, compared per frame
