"""A signal a shield held off is honoured (suites/run/shield.py): the command stops at the first point where stopping
loses nothing, its run ends KILLED naming the signal, and it exits 130. Each case delivers the signal *inside* one
shield (tests/support/signal_inside.py wraps the shielded call), never by timing.

Round 7 (issue 87), on fa8ae96: a SIGINT noted while a phase's results were recorded was dropped when the shield came
down; the comparison's next phase ran, and the command exited 0.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.helpers import REPO, SMOKE, all_runs, bench_args

# A comparison whose every phase is a second of an idle guest, two repeats: a phase after the signal could run.
IDLE_COMPARISON = (*SMOKE, "scenario=gpu-vs-cpu", "workload=idle", "workload.seconds=1", "scenario.repeats=2")
SAID = {"INT": "Ctrl-C", "TERM": "SIGTERM", "HUP": "SIGHUP"}


def signalled(tmp_path: Path, target: str, sig: str, module: str, args: list[str],
              call: int = 1) -> subprocess.CompletedProcess[str]:
    """``module``'s command on ``args`` with ``sig`` sent inside the ``call``-th call of ``target``."""
    proc = subprocess.run([sys.executable, "-m", "tests.support.signal_inside", target, sig, str(call), module, *args],
                          cwd=REPO, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "BENCH_DATA_ROOT": str(tmp_path / "none")})
    assert f"signal-inside: sent SIG{sig} in {target}" in proc.stderr, proc.stderr[-3000:]
    return proc


@pytest.mark.parametrize(("target", "sig", "doing"), [
    ("suites.record.recorder:Recorder.local", "TERM", "interrupt noted: recording what was measured"),
    ("suites.backends.local:LocalBackend.shutdown", "INT", "interrupt noted: stopping the guests first"),
], ids=["recording", "stopping-guests"])
def test_a_signal_held_off_in_a_phase_stops_the_comparison_after_that_phase(tmp_path: Path, target: str, sig: str,
                                                                          doing: str):
    args, run_dir, uri = bench_args(tmp_path, *IDLE_COMPARISON)
    proc = signalled(tmp_path, target, sig, "suites.commands.bench", args[3:])
    assert proc.returncode == 130, proc.stderr[-3000:]
    assert doing in proc.stdout + proc.stderr
    assert "phase 1-gpu" in proc.stdout and "phase cpu" not in proc.stdout  # no next phase started
    runs = all_runs(uri)
    assert "RUNNING" not in set(runs["status"])
    [comparison] = runs[runs["tags.bench.role"] == "comparison"].to_dict("records")
    assert comparison["status"] == "KILLED" and f"interrupted ({SAID[sig]}" in comparison["tags.bench.stopped"]
    phases = runs[runs["tags.bench.role"] == "scenario"]
    assert list(phases["tags.bench.phase"]) == ["1-gpu"]  # what was measured is recorded whole
    assert (run_dir / "1-gpu-r1" / "results.json").is_file() and not (run_dir / "cpu-r1").exists()


@pytest.mark.parametrize(("target", "sig", "doing"), [
    ("suites.record.recorder:Recorder.scenario", "TERM", "interrupt noted: storing the 4 run(s) measured"),
    ("suites.backends.forkserver:ForkServer.close", "INT", "interrupt noted: stopping the comparison's preloaded"),
], ids=["storing-the-repeats", "stopping-the-zygote"])
def test_a_signal_held_off_after_the_last_repeat_stores_every_run_and_ends_the_comparison_killed(
        tmp_path: Path, target: str, sig: str, doing: str):
    """The repeats' plots and store, once after the last, and the stop of the zygote its guests were forked from:
    each a shield, so every phase run is stored FINISHED, the comparison recorded and ended KILLED, exit 130."""
    args, run_dir, uri = bench_args(tmp_path, *SMOKE, "scenario=gpu-vs-cpu", "workload=fixed-step",
                                    "workload.step_ms=1", "scenario.repeats=2")
    proc = signalled(tmp_path, target, sig, "suites.commands.bench", args[3:])
    assert proc.returncode == 130, proc.stderr[-3000:]
    assert doing in proc.stdout.replace("\n  ", " ")
    runs = all_runs(uri)
    assert "RUNNING" not in set(runs["status"])
    phases = runs[runs["tags.bench.role"] == "scenario"]
    assert len(phases) == 4 and set(phases["status"]) == {"FINISHED"}
    [comparison] = runs[runs["tags.bench.role"] == "comparison"].to_dict("records")
    assert comparison["status"] == "KILLED" and f"({SAID[sig]}" in comparison["tags.bench.stopped"]
    assert (run_dir / "comparison.csv").is_file() and (run_dir / "harness.json").is_file()


def test_a_signal_held_off_while_the_comparison_records_ends_it_killed(tmp_path: Path):
    """Every phase ran; the signal lands while the comparison's table and plot are written: all is recorded, and
    the comparison run is KILLED, not FINISHED, and the command exits 130."""
    args, run_dir, uri = bench_args(tmp_path, *SMOKE, "scenario=gpu-vs-cpu", "workload=idle", "workload.seconds=1",
                                    "scenario.repeats=1")
    proc = signalled(tmp_path, "suites.render.plots:comparison", "HUP", "suites.commands.bench", args[3:])
    assert proc.returncode == 130, proc.stderr[-3000:]
    assert "interrupt noted: recording the comparison" in proc.stdout
    assert "interrupted (SIGHUP: the terminal or ssh session hung up) while the comparison was recorded" in \
        proc.stdout.replace("\n  ", " ")
    runs = all_runs(uri)
    [comparison] = runs[runs["tags.bench.role"] == "comparison"].to_dict("records")
    assert comparison["status"] == "KILLED" and "SIGHUP" in comparison["tags.bench.stopped"]
    assert (run_dir / "comparison.csv").is_file()  # the table was written whole before it stopped
    assert sorted(runs[runs["tags.bench.role"] == "scenario"]["tags.bench.phase"]) == ["1-gpu", "cpu"]


def test_a_signal_held_off_in_a_single_run_ends_it_killed_and_exits_130(tmp_path: Path):
    args, run_dir, uri = bench_args(tmp_path, *SMOKE, "workload=idle", "workload.seconds=1")
    proc = signalled(tmp_path, "suites.record.recorder:Recorder.local", "TERM", "suites.commands.bench", args[3:])
    assert proc.returncode == 130, proc.stderr[-3000:]
    assert "interrupted (SIGTERM) while its results were recorded: the run is recorded" in \
        proc.stdout.replace("\n  ", " ")
    [run] = all_runs(uri).query("`tags.bench.role` == 'scenario'").to_dict("records")
    assert run["status"] == "KILLED" and "SIGTERM" in run["tags.bench.stopped"]
    assert (run_dir / "results.json").is_file()


def test_a_signal_held_off_in_a_sweeps_point_leaves_the_next_points_not_run(tmp_path: Path):
    sweep = tmp_path / "sweep"
    command = bench_args(tmp_path, *SMOKE, "workload=idle", "workload.seconds=1,2", f"hydra.sweep.dir={sweep}")[0]
    args = ["-m", *(a for a in command[3:] if not a.startswith("hydra.run.dir="))]
    proc = signalled(tmp_path, "suites.record.recorder:Recorder.local", "INT", "suites.commands.bench", args)
    assert proc.returncode == 130, proc.stderr[-3000:]
    assert (sweep / "0" / "results.json").is_file() and not (sweep / "1" / "results.json").exists()


def test_a_signal_held_off_in_a_studys_part_starts_no_next_part(tmp_path: Path):
    """The campaign executor (study, sizing, gpu-check share it): the part's comparison stops after its phase, the
    parts after it are not run, the study concludes from what finished and its run ends KILLED naming the signal."""
    from tests.e2e.test_core_locks import study_cmd

    proc = signalled(tmp_path, "suites.record.recorder:Recorder.local", "TERM", "suites.study.command",
                     study_cmd(tmp_path)[3:])
    assert proc.returncode == 130, proc.stderr[-3000:]
    assert "== study part 1/" in proc.stdout and "== study part 2/" not in proc.stdout
    runs = all_runs(f"sqlite:///{tmp_path / 'mlflow.db'}")
    assert "RUNNING" not in set(runs["status"])
    [study] = runs[runs["tags.bench.role"] == "study"].to_dict("records")
    assert study["status"] == "KILLED" and "interrupted (SIGTERM)" in study["tags.bench.stopped"]
    assert len(runs[runs["tags.bench.role"] == "scenario"]) == 1  # the one phase it measured, recorded
