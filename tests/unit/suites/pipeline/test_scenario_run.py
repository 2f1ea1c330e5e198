"""Tests of ``suites/pipeline/scenario_run.py`` through the bench command: a comparison's repeats keep their
results at once and are plotted and stored once, after the last repeat; a later repeat trains the steps the first
calibrated; the harness's figures are printed, recorded and kept in harness.json."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.support.helpers import REPO, all_runs, bench_args

pytestmark = pytest.mark.heavy  # a real comparison: four guests and a store

# the fixed-step stand-in at a GPU's speed (a step a millisecond), two phases, two repeats each
FAST = ("progress=quiet", "scenario=gpu-vs-cpu", "workload=fixed-step", "workload.step_ms=1",
        "workload.min_window_s=0.3", "scenario.repeats=2")


@pytest.fixture(scope="module")
def comparison(tmp_path_factory: pytest.TempPathFactory) -> tuple[subprocess.CompletedProcess[str], Path, str]:
    tmp = tmp_path_factory.mktemp("comparison")
    args, run_dir, uri = bench_args(tmp, *FAST)
    proc = subprocess.run(args, cwd=REPO, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc, run_dir, uri


def test_the_repeats_are_stored_after_the_last_one_ran(comparison):
    proc, run_dir, uri = comparison
    lines = proc.stdout.splitlines()
    last_phase = max(i for i, line in enumerate(lines) if line.startswith("phase "))
    stored = [i for i, line in enumerate(lines) if line.startswith("mlflow: run ")]
    assert len(stored) == 4 and min(stored) > last_phase  # none between two repeats
    runs = all_runs(uri)
    phases = runs[runs["tags.bench.role"] == "scenario"]
    assert sorted(phases["tags.bench.phase"]) == ["1-gpu", "1-gpu", "cpu", "cpu"]
    assert set(phases["status"]) == {"FINISHED"}
    assert all((run_dir / f"{p}-r{r}" / "utilisation.png").is_file() for p in ("1-gpu", "cpu") for r in (1, 2))


def test_a_later_repeat_trains_the_steps_the_first_calibrated(comparison):
    _, run_dir, _ = comparison
    first, later = ([json.loads((run_dir / f"1-gpu-r{r}" / "results.json").read_text())["guests"][0]["result"]
                     for r in (1, 2)])
    assert "calibrated_in" not in first["info"] and first["info"]["calibration_steps"] > 0
    assert later["info"]["calibrated_in"] == "the phase's first repeat"
    assert later["info"]["sized_steps"] == first["info"]["sized_steps"]
    assert later["info"]["setup"]["calibrate_s"] < first["info"]["setup"]["calibrate_s"]
    # set-up is timed from the process's start to a clock tick, not psutil's whole-second boot time
    assert 0 < later["metrics"]["setup_time_s"] < later["metrics"]["wall_time_s"]


def test_the_harness_figures_are_printed_recorded_and_kept(comparison):
    proc, run_dir, uri = comparison
    said = proc.stdout.replace("\n  ", " ")
    assert "harness: measured share " in said and "of this command's wall so far, 4 comparison repeat(s)" in said
    assert "harness: cost per repeat after the first (one window's end to the next one's start): median " in said
    doc = json.loads((run_dir / "harness.json").read_text())
    assert len(doc["spans"]) == 4 and len(doc["cost_per_repeat_s"]) == 3
    # each window lasts its 0.3 s on the meter's clock; its bounds are wall-clock reads beside it (a few ms apart)
    assert 0 < doc["measured_share"] < 1 and doc["windows_s"] == pytest.approx(sum(
        s["window"][1] - s["window"][0] for s in doc["spans"])) and doc["windows_s"] > 4 * 0.25
    runs = all_runs(uri)
    [row] = runs[runs["tags.bench.role"] == "comparison"].to_dict("records")
    assert row["metrics.harness.measured_share"] == pytest.approx(doc["measured_share"])
    assert row["metrics.harness.cost_per_repeat_s.n"] == 3


def test_plots_drawn_apart_say_which_were_drawn_and_the_rest_are_left_to_this_process(tmp_path: Path):
    from types import SimpleNamespace

    from suites.pipeline.scenario_run import draw_apart
    from tests.support.outcomes import outcome

    done = outcome(1)
    runs = [SimpleNamespace(outcome=done, plot=tmp_path / f"r{i}.png", drawn=False) for i in range(3)]
    runs[1].plot = tmp_path / "no-such-folder" / "r1.png"  # the worker that draws it fails
    draw_apart(runs)  # type: ignore[arg-type]
    apart = len(os.sched_getaffinity(0)) >= 2  # on one core none is forked: each is drawn by Pending.store
    assert [r.drawn for r in runs] == ([True, False, True] if apart else [False] * 3)
    assert not apart or runs[0].plot.stat().st_size > 1000
