"""The folders a command writes (suites/record/outdirs.py): each can be made, none is in the source tree, an
explicit run directory is new (or empty) and this run's alone, a refused run leaves nothing, two runs started in
one second get their own, a half-written run is named by the next."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from suites.errors import ConfigError
from suites.record.outdirs import claim_run_dir
from tests.support.cifar_files import bench_command, bench_run
from tests.support.helpers import REPO, SMOKE, one_error_line, run_bench
from tests.support.runs import bench
from tests.support.stores import git_status

IDLE = (*SMOKE, "workload=idle")  # a whole run in seconds: what these cases need is a run, not a measurement


INSIDE = "configs/written-by-a-test"  # in the source tree; git would show anything written there


PATH_OPTIONS = {  # every option of every command that names where it writes
    "bench hydra.run.dir": ["bench", f"hydra.run.dir={INSIDE}"],
    "bench hydra.sweep.dir": ["bench", "-m", "seed=1,2", f"hydra.sweep.dir={INSIDE}"],
    "bench tracking_uri": ["bench", f"tracking_uri=sqlite:///{INSIDE}/m.db"],
    "bench fallback_tracking_uri": ["bench", f"fallback_tracking_uri=sqlite:///{INSIDE}/y.db"],
    "bench artifact_dir": ["bench", f"artifact_dir={INSIDE}"],
    "bench data.cache_dir": ["bench", f"data.cache_dir={INSIDE}"],
    "study study.out_dir": ["study", "--plan", f"study.out_dir={INSIDE}"],
    "study fallback_tracking_uri": ["study", "--plan", f"fallback_tracking_uri=sqlite:///{INSIDE}/y.db"],
    "study artifact_dir": ["study", "--plan", f"artifact_dir={INSIDE}"],
    "report --out": ["report", "--out", INSIDE],
    "gpu-check out_dir": ["gpu-check", f"out_dir={INSIDE}"],
    "sync --to": ["sync", "--to", f"sqlite:///{INSIDE}/team.db"],
}


@pytest.mark.parametrize("key,value", [("hydra.run.dir", "/proc/x/run"), ("artifact_dir", "/proc/x/artifacts"),
                                       ("data.cache_dir", "/proc/x/data"),
                                       ("tracking_uri", "sqlite:////proc/x/mlflow.db")])
def test_an_output_folder_that_cannot_be_made_is_one_error_line(tmp_path: Path, key: str, value: str):
    run = run_bench(tmp_path, *SMOKE, f"{key}={value}", fresh_store=True)
    line = one_error_line(run.proc)
    assert line.startswith(f"error: {key}: /proc/x") and "cannot be created" in line
    assert not (tmp_path / "mlflow.db").exists() and not run.run_dir.exists()


@pytest.mark.parametrize("run_dir", ["configs", "suites/runs", "."])
def test_a_run_directory_in_the_source_tree_is_refused_and_nothing_is_written(tmp_path: Path, run_dir: str):
    """``hydra.run.dir=configs`` must not overwrite configs/config.yaml (every later run would fail)."""
    before = git_status()
    run = run_bench(tmp_path, *SMOKE, f"hydra.run.dir={run_dir}")
    assert "is in the suite's source tree" in one_error_line(run.proc)
    assert git_status() == before


def test_a_run_directory_that_holds_files_is_refused(tmp_path: Path):
    """A run after another in the same folder never replaces its files silently."""
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "results.json").write_text('{"status": "ok"}')
    run = run_bench(tmp_path, *SMOKE)
    assert "already holds files (results.json): a run directory must be new or empty" in one_error_line(run.proc)
    assert (tmp_path / "run" / "results.json").read_text() == '{"status": "ok"}'


def test_a_run_directory_another_run_holds_is_refused(tmp_path: Path):
    """Two runs given one folder at once: the first holds it, the second is refused (none of its results lost)."""
    claim = claim_run_dir(tmp_path / "run")
    try:
        run = run_bench(tmp_path, *SMOKE)
        assert "is in use by another benchmark run on this host" in one_error_line(run.proc)
        with pytest.raises(ConfigError, match="in use by another benchmark run"):
            claim_run_dir(tmp_path / "run")
    finally:
        claim.release()
    claim_run_dir(tmp_path / "run").release()  # free once its holder let go (and still empty)


def test_a_refused_run_leaves_no_folder_it_made(tmp_path: Path):
    """``strict=true hydra.run.dir=/tmp/zq/x/y`` on a host without a GPU leaves no /tmp/zq/x."""
    proc = bench(tmp_path, *SMOKE, "strict=true", f"hydra.run.dir={tmp_path / 'zq' / 'x' / 'y'}")
    assert "strict=true" in one_error_line(proc)
    assert not (tmp_path / "zq").exists()


def test_a_half_written_run_is_named_by_the_next_run_once(tmp_path: Path):
    killed = tmp_path / "runs" / "2026-01-01_00-00-00.000-1"
    (killed / ".hydra").mkdir(parents=True)
    (killed / ".hydra" / "config.yaml").write_text("experiment: gpu-mixed-bench\n")
    (killed / "bench.log").write_text("")
    said = f"note: {killed}: no results.json: a run that was killed?"
    nxt = bench(tmp_path, *IDLE, f"hydra.run.dir={tmp_path / 'runs' / 'next'}")
    assert nxt.returncode == 0 and said in nxt.stdout, nxt.stderr[-2000:]
    later = bench(tmp_path, *SMOKE, "strict=true", f"hydra.run.dir={tmp_path / 'runs' / 'later'}")
    assert later.returncode == 2 and "no results.json" not in later.stdout + later.stderr


@pytest.mark.parametrize("name", sorted(PATH_OPTIONS))
def test_no_path_option_of_any_command_writes_into_the_source_tree(name: str):
    proc = subprocess.run([sys.executable, "-m", "suites", *PATH_OPTIONS[name]], cwd=REPO, capture_output=True,
                          text=True, timeout=120)
    line = one_error_line(proc)
    assert "is in the suite's source tree" in line and "configs/written-by-a-test" in line, line
    assert not (REPO / INSIDE).exists()


@pytest.mark.parametrize("args, says", [
    (["report", "--out", ""], "--out: empty; name a folder"),
    (["study", "--plan", "hydra.run.dir=configs"], "hydra.run.dir: a study writes its parts under study.out_dir"),
    (["gpu-check", "out_dir="], "gpu-check: out_dir: empty"),
])
def test_an_empty_output_folder_or_one_a_command_never_uses_is_refused(args: list[str], says: str):
    """``report --out ''`` wrote its five files into the repository root; ``study hydra.run.dir=configs`` was
    taken silently."""
    before = git_status()
    assert says in one_error_line(subprocess.run([sys.executable, "-m", "suites", *args], cwd=REPO,
                                                 capture_output=True, text=True, timeout=120))
    assert git_status() == before


@pytest.mark.parametrize("key, where, says", [
    ("hydra.run.dir", "file/run", "hydra.run.dir: {tmp}/file/run cannot be created ({tmp}/file is not a directory)"),
    ("hydra.run.dir", "file/runs/${run_stamp:}", "hydra.run.dir: {tmp}/file/runs/<stamp> cannot be created ({tmp}/file "
                                                 "is not a directory)"),
    ("data.cache_dir", "file/data", "data.cache_dir: {tmp}/file/data cannot be created ({tmp}/file is not a "
                                    "directory)"),
])
def test_an_unusable_run_or_cache_directory_is_one_line(tmp_path: Path, key: str, where: str, says: str):
    (tmp_path / "file").write_text("a file where a directory should be")
    proc = bench_run(tmp_path, *SMOKE, f"{key}={tmp_path / where}", fresh_store=True)
    line = re.sub(r"/runs/[0-9_.-]+ ", "/runs/<stamp> ", one_error_line(proc))  # the stamp Hydra would use
    assert line == f"error: {says.format(tmp=tmp_path)}"
    assert not (tmp_path / "mlflow.db").exists() and not (tmp_path / "run").exists()


def test_two_runs_started_in_the_same_second_get_their_own_directories(tmp_path: Path):
    """The default run directory is ${run_stamp:} (time, milliseconds, pid): two runs at once, two directories,
    each with its own results and guest log."""
    hydra_cfg = subprocess.run([*bench_command(tmp_path)[:3], "--cfg", "hydra"], cwd=REPO, capture_output=True,
                               text=True, timeout=60).stdout
    assert "dir: outputs/runs/${run_stamp:}" in hydra_cfg and "dir: outputs/sweeps/${run_stamp:}" in hydra_cfg
    runs = []
    for i in range(2):
        args = bench_command(tmp_path / f"store{i}", *SMOKE, f"hydra.run.dir={tmp_path}/runs/${{run_stamp:}}")
        runs.append(subprocess.Popen(args, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                     env={**os.environ, "BENCH_DATA_ROOT": str(tmp_path / "none")}))
    for p in runs:
        _, err = p.communicate(timeout=300)
        assert p.returncode == 0, err[-2000:]
    dirs = sorted((tmp_path / "runs").iterdir())
    assert len(dirs) == 2, dirs
    pids = {d.name.rsplit("-", 1)[1] for d in dirs}
    assert pids == {str(p.pid) for p in runs}  # each run's directory carries its own process id
    for d in dirs:
        assert (d / "results.json").exists() and (d / "g0.log").exists()
