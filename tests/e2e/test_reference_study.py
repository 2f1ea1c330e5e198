"""``make study``: the whole study on this host, its report, its export, its trial runs (the planner's pure tests are
unit/suites/study/test_plan.py's)."""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from suites.study.plan import EPISODE_1
from tests.support import progress
from tests.support.helpers import REPO, STAND_IN_ML

NO_TF = {"tensorflow": "TensorFlow not installed"}


def study(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "suites.study.command", f"study.out_dir={tmp_path / 'study'}",
           f"tracking_uri=sqlite:///{tmp_path / 'mlflow.db'}", f"artifact_dir={tmp_path / 'artifacts'}",
           f"data.cache_dir={tmp_path / 'data'}", "progress=quiet", *args]
    return progress.run(cmd, watch=(tmp_path,), cwd=REPO,
                        env={**os.environ, "BENCH_DATA_ROOT": str(tmp_path / "no-real-data")})


@pytest.mark.parametrize("arg, says", [("study.budget_s=-5", "study.budget_s: must be seconds in (0, 604800]"),
                                       ("study.budget_s=0", "study.budget_s: must be seconds in (0, 604800]"),
                                       ("study.budget_s=1e9", "study.budget_s: must be seconds in (0, 604800]"),
                                       ("study.budget_s=1", "study.budget_s=1: the smallest study this host can run"),
                                       ("study.nosuch=1", "nosuch"),
                                       ("study.tier=huge", "study.tier: must be one of")])
def test_bad_study_settings_are_one_line_before_anything(tmp_path: Path, arg: str, says: str):
    proc = study(tmp_path, arg)
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert proc.returncode == 2 and len(lines) == 1 and lines[0].startswith("error:") and says in lines[0],\
        proc.stderr
    assert not (tmp_path / "study").exists() and not (tmp_path / "mlflow.db").exists()


@pytest.mark.slow(minutes=4)  # with the killed study's 1.5: its module goes first (tests/conftest.py)
def test_the_study_on_this_host_reports_every_reference_row_and_travels(tmp_path: Path):
    """The whole study within a small budget (no GPU here: episode 2 only, labelled not enforced): the mixed study
    of m60-8q and a consolidation, each phase once (repeats and their spread: tests/test_honest.py)."""
    # planned from the table (the trial runs: below), so the budget's trims are the same on every host
    # one mixed profile (the others' rows: skipped, not in study.profiles), with room for this host's set-up and
    # the table's optimism: a part that cannot end within the budget does not start
    # the ML guests the 1 ms stand-in: what is tested is the study's plan, report and export (real training in a
    # mixed run: tests/e2e/test_mixed.py)
    proc = study(tmp_path, "study.budget_s=300", "study.profiles=[m60-8q]", "study.repeats=1", "study.max_guests=1",
                 "study.trials=false", *STAND_IN_ML)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    (folder,) = (p for p in (tmp_path / "study").iterdir() if p.is_dir())
    assert "estimate s" in proc.stdout and "table (not measured)" in proc.stdout  # each part's estimate beside
    md = (folder / "report.md").read_text()
    for part in EPISODE_1:
        for ref in part.references:
            assert ref.text in md, ref.text
    for profile in ("m60-8q", "m60-4q", "m60-2q", "m60-1q"):
        assert f"| mixed | {profile} |" in md
    assert "NOT A GPU MEASUREMENT" in md and "## Skipped on this host" in md
    assert "- scaling: 1-gpu needs 1 GPU, 2-gpu needs 2 GPUs, 4-gpu needs 4 GPUs; host has no GPU" in md
    assert "| mixed | m60-8q |" in md and "not enforced" in md.split("| mixed | m60-8q |")[1].split("\n")[0]
    assert (folder / "report.html").exists() and (folder / "slowdown.png").exists()

    import mlflow

    mlflow.set_tracking_uri(f"sqlite:///{tmp_path / 'mlflow.db'}")
    runs = mlflow.search_runs(experiment_names=["gpu-mixed-bench"])
    (study_id,) = runs[runs["tags.bench.kind"] == "study"]["run_id"]
    parts = runs[runs["tags.mlflow.parentRunId"] == study_id]
    assert set(parts["tags.bench.study_part"]) == {"mixed", "consolidation"}
    skips = json.loads(runs[runs["run_id"] == study_id]["tags.bench.skips"].iloc[0])
    assert ["gpu-vs-cpu", "1-gpu needs 1 GPU; host has no GPU"] in skips
    # the harness's own cost, over the study's parts: said and recorded on the study's run
    said = proc.stdout.replace("\n  ", " ")
    assert "harness: measured share " in said and "of this study's wall" in said
    share = runs[runs["run_id"] == study_id]["metrics.harness.measured_share"].iloc[0]
    assert 0 < share < 1 and f"measured share {share:.0%}" in said

    # the report rebuilt from the store alone says the same
    rebuilt = subprocess.run([sys.executable, "-m", "suites.commands.report", "--tracking-uri",
                              f"sqlite:///{tmp_path / 'mlflow.db'}", "--study", "--out", str(tmp_path / "again")],
                             cwd=REPO, capture_output=True, text=True, timeout=120)
    assert rebuilt.returncode == 0, rebuilt.stderr
    assert (tmp_path / "again" / "report.md").read_text() == md

    # what a GPU host sends back: the study directory alone, imported into another store
    target = f"sqlite:///{tmp_path / 'home.db'}"
    imp = subprocess.run([sys.executable, "-m", "suites.commands.sync", "--run-dir", str(folder), "--to", target],
                         cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert imp.returncode == 0 and "imported" in imp.stdout, imp.stderr
    mlflow.set_tracking_uri(target)
    home = mlflow.search_runs(experiment_names=["gpu-mixed-bench"])
    assert len(home) == len(runs)
    phase = home[home["tags.bench.phase"] == "m60-8q/ml"].iloc[0]
    assert phase["metrics.makespan_s"] > 0 and phase["status"] == "FINISHED"
    client = mlflow.tracking.MlflowClient(target)
    assert {"results.json", "config.yaml", "samples.csv"} <= {a.path for a in client.list_artifacts(phase.run_id)}
    again = subprocess.run([sys.executable, "-m", "suites.commands.sync", "--run-dir", str(folder), "--to", target],
                           cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert "already imported" in again.stdout and len(mlflow.search_runs(experiment_names=["gpu-mixed-bench"]))\
        == len(runs)


def test_a_trial_run_times_a_whole_bench_run_once_per_host_and_keeps_it(tmp_path: Path):
    from gpu_probe import inventory
    from suites.campaign import costs

    inv, said = inventory.collect(), []
    overrides = [f"data.cache_dir={tmp_path / 'data'}", "workload.step_ms=1", "profile.vcpus=1"]
    t0 = time.monotonic()
    first = costs.time_trials(["fixed-step"], "smoke", overrides, tmp_path, inv, said.append)
    took = time.monotonic() - t0
    assert 0 < first[("fixed-step", "smoke")] <= took + 0.05  # the bench run's whole wall time (to 0.1 s)
    assert said == ["a trial run of fixed-step (smoke sizes), once on this host, for the plan (at most 600 s)"]
    again = costs.time_trials(["fixed-step"], "smoke", overrides, tmp_path, inv, said.append)
    assert again == first and len(said) == 1  # cached: not run twice
    saved = json.loads((tmp_path / "trials.json").read_text())
    assert saved == {costs.fingerprint(inv): {"fixed-step/smoke": first[("fixed-step", "smoke")]}}
    other = dataclasses.replace(inv, cpu_model="another CPU")
    assert costs.cached_trials(tmp_path, other) == {}  # another host's figures never plan this one
    bad = costs.time_trials(["fixed-step"], "full", [*overrides, "workload.step_ms=-1"], tmp_path, inv, said.append)
    assert ("fixed-step", "full") not in bad and "the fixed-step trial run failed" in said[-1]


def test_gpu_check_without_a_gpu_skips_every_check_saying_why(tmp_path: Path):
    import time

    t0 = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "suites.gpucheck.command", f"out_dir={tmp_path}"], cwd=REPO,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert time.monotonic() - t0 < 60
    (root,) = [p for p in tmp_path.iterdir() if p.is_dir()]
    summary = json.loads((root / "summary.json").read_text())
    assert [r["check"] for r in summary["rows"]] == ["a", "b1", "c1", "c2", "c3", "d", "e", "b3", "b2", "g", "i", "j",
                                                      "l", "k", "h", "f"]  # in priority order
    assert all(r["result"].startswith("skipped: no GPU") for r in summary["rows"])
    md = (root / "summary.md").read_text()
    assert "| b2 CUDA training: CIFAR-10, the record's recipe in fp16, without torch.compile | skipped: no GPU" in md
    assert (root / f"gpu-check-{root.name}.tar.gz").stat().st_size > 0
    strict = subprocess.run([sys.executable, "-m", "suites", "gpu-check", f"out_dir={tmp_path / 's'}", "strict=true"],
                            cwd=REPO, capture_output=True, text=True, timeout=120)
    assert strict.returncode == 2 and strict.stderr.startswith("error: gpu-check strict=true: no GPU on this host")
    assert len(strict.stderr.strip().splitlines()) == 1 and not (tmp_path / "s").exists()


def test_a_check_that_breaks_is_a_failed_row_with_its_traceback_not_the_end(tmp_path: Path):
    import time

    from gpu_probe.inventory import Inventory
    from suites.gpucheck.checks import Context, run_check

    ctx = Context(tmp_path, Inventory("h", "Linux", "3.11", "cpu", 2, 2, 2, 8192.0), None, time.monotonic() + 60,
                  lambda line: None)

    def broken():
        raise KeyError("util_pct")

    row = run_check(ctx, "b2", broken)
    assert row.result == "failed: KeyError: 'util_pct' (logs/b2-fault.log)"
    assert "KeyError" in (tmp_path / "logs" / "b2-fault.log").read_text()


def test_a_trial_run_that_outlasts_its_share_of_the_budget_is_stopped_and_said(tmp_path: Path):
    from gpu_probe import inventory
    from suites.campaign import costs

    said: list[str] = []
    t0 = time.monotonic()
    got = costs.time_trials(["fixed-step"], "full", [f"data.cache_dir={tmp_path / 'data'}", "profile.vcpus=1",
                                                     "workload.size_by=work", "workload.step_ms=1000"],
                            tmp_path, inventory.collect(), said.append, timeout_s=3.0)
    assert time.monotonic() - t0 < 3.0 + costs.STOP_GRACE_S + 5
    assert got == {} and "stopped after 3 s (25% of the command's budget_s)" in said[-1], said
    assert not [p for p in psutil.process_iter(["cmdline"]) if "study-trial-" in " ".join(p.info["cmdline"] or [])]


def test_a_study_killed_mid_way_leaves_its_finished_parts_exported(tmp_path: Path):
    """A GPU host's command limit (10 minutes) ends a study wherever it is: what finished is exported after each
    part, the study run marked cut off in the export, never running."""
    cmd = [sys.executable, "-m", "suites.study.command", f"study.out_dir={tmp_path / 'study'}",
           f"tracking_uri=sqlite:///{tmp_path / 'mlflow.db'}", f"artifact_dir={tmp_path / 'artifacts'}",
           f"data.cache_dir={tmp_path / 'data'}", "progress=quiet", "study.budget_s=300", "study.profiles=[m60-8q]",
           "study.repeats=1", "study.max_guests=2", "study.trials=false", *STAND_IN_ML]  # what is tested: the export
    proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True, env={**os.environ, "BENCH_DATA_ROOT": str(tmp_path / "none")})
    seen = []
    try:
        for line in proc.stdout:  # type: ignore[union-attr]
            seen.append(line)
            if "== study part 2/2" in line:
                break
        os.killpg(proc.pid, signal.SIGKILL)  # no handler runs: as a command limit's kill
    finally:
        proc.wait(timeout=60)
    assert any("== study part 2/2" in ln for ln in seen), "".join(seen)[-3000:]
    (folder,) = (p for p in (tmp_path / "study").iterdir() if p.is_dir())
    runs = json.loads((folder / "mlflow-export" / "runs.json").read_text())["runs"]
    parts = {r["tags"].get("bench.study_part") for r in runs if r["tags"].get("bench.study_part")}
    assert parts == {"mixed"}, parts  # the first part, whole; the second had not finished
    root = next(r for r in runs if r["tags"].get("bench.kind") == "study")
    assert root["status"] == "FAILED" and "still running when exported" in root["tags"]["bench.exported_running"]
    assert all(r["status"] != "RUNNING" for r in runs)
    assert not list(folder.glob("mlflow-export.*"))  # no half-written export beside it


def test_ctrl_c_during_a_trial_run_stops_its_process_group(tmp_path: Path):
    """Issue 74 (T4): a Ctrl-C while a trial run trained left its bench process (a session of its own) running."""
    from suites.campaign import costs

    script = ("import pathlib, sys\nfrom gpu_probe import inventory\nfrom suites.campaign import costs\n"
              "costs.time_trials(['fixed-step'], 'full', sys.argv[2:], pathlib.Path(sys.argv[1]), inventory.collect(), "
              "lambda line: print(line, flush=True), timeout_s=300.0)\n")
    marker = f"data.cache_dir={tmp_path / 'data'}"

    def trial_running() -> bool:
        return any(marker in " ".join(p.info["cmdline"] or []) for p in psutil.process_iter(["cmdline"]))

    proc = subprocess.Popen([sys.executable, "-c", script, str(tmp_path), marker, "profile.vcpus=1",
                             "workload.size_by=work", "workload.step_ms=1000"], cwd=REPO, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        first = proc.stdout.readline()  # type: ignore[union-attr]
        assert first.startswith("a trial run of fixed-step"), first
        deadline = time.monotonic() + 60
        while not trial_running() and time.monotonic() < deadline:  # its bench process has started
            time.sleep(0.2)
        assert trial_running()
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=costs.STOP_GRACE_S + 15)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        left = [p for p in psutil.process_iter(["cmdline"]) if marker in " ".join(p.info["cmdline"] or [])]
        for p in left:  # what a failing run of this test leaves: its own trial run, found by its folder
            os.killpg(p.pid, signal.SIGKILL)
    assert proc.returncode != 0 and not left
