"""Where Hydra writes, read from Hydra's own composition (suites/pipeline/hydra_dirs.py): ``++``, repeated keys,
sweep subdirs and quotes reach the folder that was checked, never the source tree or a finished run's."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from tests.support.helpers import SMOKE, one_error_line
from tests.support.runs import bench
from tests.support.stores import git_status

IDLE = (*SMOKE, "workload=idle")  # a whole run in seconds: what these cases need is a run, not a measurement


def digest(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture
def finished_run(tmp_path: Path) -> Path:
    """A run directory as a finished run leaves it (Hydra's .hydra/, results, a guest log)."""
    run = tmp_path / "earlier"
    (run / ".hydra").mkdir(parents=True)
    (run / ".hydra" / "config.yaml").write_text("experiment: gpu-mixed-bench\n")
    (run / "results.json").write_text('{"status": "ok", "guests": []}')
    (run / "g0.log").write_text("training started\n")
    return run


@pytest.mark.parametrize("spelling", [["++hydra.run.dir=configs"],
                                      ["hydra.run.dir=outputs/x", "hydra.run.dir=configs"],
                                      ["hydra.run.dir=outputs/../configs"], ["hydra.run.dir='configs'"]])
def test_plusplus_or_repeated_run_dir_in_the_source_tree_is_refused_and_git_stays_clean(tmp_path: Path,
                                                                                         spelling: list[str]):
    before = git_status()
    proc = bench(tmp_path, *SMOKE, *spelling)
    assert "hydra.run.dir: " in one_error_line(proc) and "is in the suite's source tree" in proc.stderr
    assert git_status() == before


def test_a_sweep_dir_in_the_source_tree_with_subdir_dot_is_refused_and_git_stays_clean(tmp_path: Path):
    before = git_status()
    proc = bench(tmp_path, "-m", *SMOKE, "scenario.guests=1", "hydra.sweep.dir=configs", "hydra.sweep.subdir=.")
    assert one_error_line(proc).startswith("error: hydra.sweep.dir: configs is in the suite's source tree")
    assert git_status() == before


@pytest.mark.parametrize("subdir,says", [(".", "each point needs its own folder directly under hydra.sweep.dir"),
                                         ("../elsewhere", "each point needs its own folder directly under"),
                                         ("same", "sweep points profile=m60-1q and profile=m60-8q would share")])
def test_sweep_subdirs_that_leave_the_sweep_or_share_a_folder_are_refused(tmp_path: Path, subdir: str, says: str):
    proc = bench(tmp_path, "-m", *SMOKE, "profile=m60-1q,m60-8q", f"hydra.sweep.dir={tmp_path / 'sweep'}",
                 f"hydra.sweep.subdir={subdir}")
    assert says in one_error_line(proc)
    assert not (tmp_path / "sweep").exists() and not (tmp_path / "elsewhere").exists()


def test_plusplus_run_dir_of_a_finished_run_is_refused_and_its_files_are_byte_identical(tmp_path: Path,
                                                                                        finished_run: Path):
    before = digest(finished_run)
    proc = bench(tmp_path, *SMOKE, f"++hydra.run.dir={finished_run}")
    assert "already holds files (.hydra, g0.log, results.json)" in one_error_line(proc)
    assert digest(finished_run) == before


def test_a_sweep_into_a_finished_sweeps_folder_is_refused_and_its_files_are_byte_identical(tmp_path: Path,
                                                                                           finished_run: Path):
    before = digest(finished_run)
    proc = bench(tmp_path, "-m", *SMOKE, "profile=m60-1q,m60-8q", f"hydra.sweep.dir={finished_run}")
    assert one_error_line(proc).startswith(f"error: hydra.sweep.dir: {finished_run} already holds files")
    assert digest(finished_run) == before


def test_hydra_output_subdir_outside_the_run_folder_is_refused(tmp_path: Path):
    before = git_status()
    proc = bench(tmp_path, *SMOKE, f"hydra.run.dir={tmp_path / 'run'}",
                 "hydra.output_subdir=../../../../../../../configs")
    assert "hydra.output_subdir: " in one_error_line(proc) and "outside the run's folder" in proc.stderr
    assert git_status() == before and not (tmp_path / "run").exists()


def test_a_quoted_run_dir_outside_the_tree_is_accepted_and_written_as_hydra_reads_it(tmp_path: Path):
    """``'hydra.run.dir="/tmp/zz/a b"'`` is not refused as inside the source tree."""
    where = tmp_path / "zz" / "a b"
    proc = bench(tmp_path, *IDLE, f'hydra.run.dir="{where}"')
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert (where / "results.json").is_file() and (where / ".hydra" / "config.yaml").is_file()
