"""Bad input, round 2: folders that cannot be made or must not be written, runs that would meet in one folder or one
comparison, and a disk that fills while results are written. Each is one ``error:`` line and exit 2 before anything
starts, or a recorded failure with its reason."""

from __future__ import annotations

import errno
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from suites.backends import corelock
from suites.errors import ConfigError
from suites.record.outdirs import claim_run_dir
from suites.record.rundir import write_atomic

from .helpers import REPO, SMOKE, bench_args, one_error_line, run_bench


@pytest.mark.e2e
@pytest.mark.parametrize("key,value", [("hydra.run.dir", "/proc/x/run"), ("artifact_dir", "/proc/x/artifacts"),
                                       ("data.cache_dir", "/proc/x/data"),
                                       ("tracking_uri", "sqlite:////proc/x/mlflow.db")])
def test_an_output_folder_that_cannot_be_made_is_one_error_line(tmp: Path, key: str, value: str):
    run = run_bench(tmp, *SMOKE, f"{key}={value}", timeout=120, fresh_store=True)
    line = one_error_line(run.proc)
    assert line.startswith(f"error: {key}: /proc/x") and "cannot be created" in line
    assert not (tmp / "mlflow.db").exists() and not run.run_dir.exists()


def git_status() -> str:
    return subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=REPO, capture_output=True,
                          text=True, check=True).stdout


@pytest.mark.e2e
@pytest.mark.parametrize("run_dir", ["configs", "suites/runs", "."])
def test_a_run_directory_in_the_source_tree_is_refused_and_nothing_is_written(tmp: Path, run_dir: str):
    """``hydra.run.dir=configs`` used to overwrite configs/config.yaml, and every later run failed."""
    before = git_status()
    run = run_bench(tmp, *SMOKE, f"hydra.run.dir={run_dir}", timeout=120)
    assert "is in the suite's source tree" in one_error_line(run.proc)
    assert git_status() == before


@pytest.mark.e2e
def test_a_run_directory_that_holds_files_is_refused(tmp: Path):
    """A run after another in the same folder used to replace its files silently."""
    (tmp / "run").mkdir()
    (tmp / "run" / "results.json").write_text('{"status": "ok"}')
    run = run_bench(tmp, *SMOKE, timeout=120)
    assert "already holds files (results.json): a run directory must be new or empty" in one_error_line(run.proc)
    assert (tmp / "run" / "results.json").read_text() == '{"status": "ok"}'


@pytest.mark.e2e
def test_a_run_directory_another_run_holds_is_refused(tmp: Path):
    """Two runs given one folder at once both used to exit 0, one's results lost: the first holds it."""
    claim = claim_run_dir(tmp / "run")
    try:
        run = run_bench(tmp, *SMOKE, timeout=120)
        assert "is in use by another benchmark run on this host" in one_error_line(run.proc)
        with pytest.raises(ConfigError, match="in use by another benchmark run"):
            claim_run_dir(tmp / "run")
    finally:
        claim.release()
    claim_run_dir(tmp / "run").release()  # free once its holder let go (and still empty)


def test_a_disk_that_fills_while_results_are_written_leaves_the_last_whole_file(tmp_path: Path,
                                                                              monkeypatch: pytest.MonkeyPatch):
    """A fault injected at the write (ENOSPC at fsync): the earlier results.json stays whole, nothing half-written
    is left to be read back as a result, and the error reaches the caller (the run records it as its failure)."""
    path = tmp_path / "results.json"
    write_atomic(path, json.dumps({"status": "ok", "guests": [1, 2]}))

    def full(fd: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(OSError, match="No space left"):
        write_atomic(path, json.dumps({"status": "partial"}))
    assert json.loads(path.read_text()) == {"status": "ok", "guests": [1, 2]}
    assert [p.name for p in tmp_path.iterdir()] == ["results.json"]


def study_cmd(tmp: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "suites.study.command", f"study.out_dir={tmp / 'study'}",
            f"tracking_uri=sqlite:///{tmp / 'mlflow.db'}", f"artifact_dir={tmp / 'artifacts'}",
            f"data.cache_dir={tmp / 'data'}", "progress=quiet", "study.budget_s=60", "study.calibrate=false", *args]


@pytest.mark.e2e
def test_a_study_beside_another_run_is_refused_naming_it(tmp: Path):
    """A study compares runs: beside a bench (or another study) holding a core it is refused, or waits with
    wait_for_cores_s, instead of mixing the other run's load into its comparisons. The other run is a lease in this
    test's own state (the two meet there, as two runs on one host do)."""
    with corelock.CoreLease("outputs/runs/a-bench").acquire([sorted(os.sched_getaffinity(0))[0]]):
        proc = subprocess.run(study_cmd(tmp, "wait_for_cores_s=0"), cwd=REPO, capture_output=True, text=True,
                              timeout=300, env={**os.environ, "BENCH_DATA_ROOT": str(tmp / "none")})
    line = one_error_line(proc)
    assert "a study compares runs on a host it has to itself" in line and "outputs/runs/a-bench" in line
    assert not (tmp / "mlflow.db").exists()


@pytest.mark.e2e
def test_a_bench_beside_a_study_queues_for_its_cores(tmp: Path):
    """The study holds every core for its whole length: a bench started meanwhile waits (or is refused)."""
    study = subprocess.Popen(study_cmd(tmp / "s"), cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             text=True, env={**os.environ, "BENCH_DATA_ROOT": str(tmp / "none"),
                                             "PYTHONUNBUFFERED": "1"})
    try:
        line = study.stdout.readline()
        while line and "== study part 1/" not in line:
            line = study.stdout.readline()
        assert line, "the study ended before its first part"
        args, run_dir, _ = bench_args(tmp / "b", *SMOKE, "workload=idle", "workload.seconds=1", "wait_for_cores_s=0")
        bench = subprocess.run(args, cwd=REPO, capture_output=True, text=True, timeout=300,
                               env={**os.environ, "BENCH_DATA_ROOT": str(tmp / "none")})
        line = one_error_line(bench)
        assert "another benchmark run on this host holds" in line
        # the arithmetic right, the holder named, the fix that works (it said '... > 0 host cores (... or set
        # scenario.cpu_overcommit=true)' on cfed7fc)
        assert re.search(r"\d+ vCPUs wanted, 0 of \d+ cores free", line), line
        assert "wait_for_cores_s=<seconds> (default 600)" in line, line
        assert "host cores" not in line and "cpu_overcommit" not in line
        assert str(tmp / "s" / "study") in bench.stderr and f"pid {study.pid} `" in line
    finally:
        study.terminate()
        study.communicate(timeout=300)
    assert study.returncode == 130


@pytest.mark.e2e
@pytest.mark.parametrize("arg,says", [("out_dir=/proc/x", "out_dir: /proc/x/"), ("budget_s=nan", "got nan"),
                                      ("budget_s=-5", "got -5.0"), ("out_dir=configs", "source tree")])
def test_gpu_check_refuses_where_it_cannot_write_before_any_check(tmp_path: Path, arg: str, says: str):
    proc = subprocess.run([sys.executable, "-m", "suites.commands.gpu_check", arg], cwd=REPO, capture_output=True,
                          text=True, timeout=120)
    assert says in one_error_line(proc)


def export_doc() -> dict:
    """A run export as `make study` writes one (suites/record/export.py): a parent run and one nested run."""
    run = {"run_id": "a" * 32, "run_name": "study", "status": "FINISHED", "start_time": 1_700_000_000_000,
           "end_time": 1_700_000_060_000, "tags": {"bench.kind": "study"}, "params": {"tier": "smoke"},
           "metrics": {"elapsed_s": 60.0}}
    child = {**json.loads(json.dumps(run)), "run_id": "b" * 32, "run_name": "part",
             "tags": {"mlflow.parentRunId": "a" * 32}}
    return {"format": "gpu-mixed-bench/run-export", "version": 1, "root": "a" * 32, "runs": [run, child]}


def sync(folder: Path, db: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "suites.commands.sync", "--run-dir", str(folder), "--to",
                           f"sqlite:///{db}"], cwd=REPO, capture_output=True, text=True, timeout=300)


def edited(doc: dict, how: str) -> str:
    if how == "truncated":
        return json.dumps(doc)[:150]
    if how == "wrong-type":
        doc["runs"][1]["metrics"]["elapsed_s"] = "sixty"
    elif how == "five-mb-field":
        doc["runs"][1]["params"]["notes"] = "x" * (5 * 2**20)
    elif how == "path-as-run-id":
        doc["runs"][1]["run_id"] = "../../../etc"
    return json.dumps(doc)


@pytest.mark.e2e
@pytest.mark.parametrize("how,says", [("truncated", "runs.json: not JSON"),
                                      ("wrong-type", "runs.json: runs[1].metrics.elapsed_s: must be a number"),
                                      ("five-mb-field", "runs.json: runs[1].params.notes: must be text of at most"),
                                      ("path-as-run-id", "runs.json: runs[1].run_id: '../../../etc' is not a run id")])
def test_an_export_edited_by_hand_is_one_line_and_nothing_is_imported(tmp_path: Path, how: str, says: str):
    folder = tmp_path / "study" / "mlflow-export"
    folder.mkdir(parents=True)
    (folder / "runs.json").write_text(edited(export_doc(), how))
    proc = sync(tmp_path / "study", tmp_path / "team.db")
    assert says in one_error_line(proc)
    assert not (tmp_path / "team.db").exists()  # nothing imported, not even the first run


@pytest.mark.e2e
def test_an_export_whose_artifact_links_out_of_it_is_refused(tmp_path: Path):
    folder = tmp_path / "study" / "mlflow-export"
    (folder / "artifacts" / ("b" * 32)).mkdir(parents=True)
    (folder / "artifacts" / ("b" * 32) / "notes.txt").symlink_to("/etc/hostname")
    (folder / "runs.json").write_text(json.dumps(export_doc()))
    assert "a link out of the export (/etc/hostname)" in one_error_line(sync(tmp_path / "study", tmp_path / "t.db"))
    (folder / "artifacts" / ("b" * 32) / "notes.txt").unlink()
    ok = sync(tmp_path / "study", tmp_path / "t.db")  # the same export, unedited: imported whole
    assert ok.returncode == 0 and "with every run nested below it" in ok.stdout, ok.stderr[-2000:]
