"""What is refused before anything starts (suites/pipeline/prechecks.py, command_line.py): one ``error:`` line,
exit 2, nothing written, for a bad argument of any command, an unparseable override (with the quote that fixes
it), a user's config dir read as Hydra reads it, an experiment name MLflow cannot take."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.cifar_files import bench_run
from tests.support.helpers import REPO, SMOKE, one_error_line
from tests.support.runs import bench


# --- a user's own config directory, through --config-dir or hydra.searchpath --------------------------------
def user_profiles(tmp_path: Path) -> Path:
    folder = tmp_path / "myconf" / "profile"
    folder.mkdir(parents=True)
    (folder / "mine.yaml").write_text("defaults:\n  - base_profile\nname: mine\ngpu_access: cpu\ngpus: 0\nvcpus: 1\n"
                                      "memory_MiB: 4096\n")
    return folder.parent


def test_a_newline_in_experiment_is_refused(tmp_path: Path):
    proc = bench(tmp_path, *SMOKE, f"hydra.run.dir={tmp_path / 'run'}", "experiment='a\nb'")
    assert "experiment: 'a\\nb': no newline or control character" in one_error_line(proc)
    sync = subprocess.run([sys.executable, "-m", "suites.commands.sync", "--experiment", "a\nb"], cwd=REPO,
                          capture_output=True, text=True, timeout=120)
    assert sync.returncode == 2 and "no newline or control character" in sync.stderr


@pytest.mark.parametrize("given,hint", [("experiment=é", "experiment='é'"), ("data.root=/tmp/é", "data.root='/tmp/é'"),
                                        ("hydra.run.dir=/tmp/zz/é", "hydra.run.dir='/tmp/zz/é'"),
                                        ("++hydra.run.dir=/tmp/é", "++hydra.run.dir='/tmp/é'")])
def test_an_unparseable_override_gets_one_line_naming_the_key_and_the_quote_fix(tmp_path: Path, given: str, hint: str):
    proc = bench(tmp_path, *SMOKE, given)
    assert one_error_line(proc).endswith(f"cannot be parsed as written; quote the value: {hint}")


def test_make_study_gives_the_same_quote_hint(tmp_path: Path):
    proc = subprocess.run([sys.executable, "-m", "suites.study.command", "--plan", "experiment=é"], cwd=REPO,
                          capture_output=True, text=True, timeout=120)
    assert one_error_line(proc) == "error: experiment: the value é cannot be parsed as written; quote the value: "\
                                   "experiment='é'"


@pytest.mark.parametrize("args, says", [
    (["bench", "-cd"], "error: argument --config-dir/-cd: expected one argument"),  # not the internal run-dir pin
    (["bench", "hydra.run.dir='/tmp/a\nb'"], "holds a control character (a newline?)"),
    (["bench", "experiment=a'b\"é"], "quote the value: experiment='a\\'b\"é'"),  # the hint itself parses
    (["report", "--mixed-run", "../../etc"], "--mixed-run '../../etc': not an MLflow run id"),
    (["bench-vm", "--vms", "100000"], "--vms 100000: 100000 VMs x 2048 MiB is more than this host's memory"),
])
def test_a_bad_argument_of_any_command_is_one_line_before_anything_starts(tmp_path: Path, args: list[str], says: str):
    proc = subprocess.run([sys.executable, "-m", "suites", *args], cwd=tmp_path, capture_output=True, text=True,
                          timeout=120, env={**__import__("os").environ, "PYTHONPATH": str(REPO)})
    assert says in one_error_line(proc)
    assert "bench-vm:" not in proc.stdout  # bench-vm said nothing of a round: nothing started
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_config_dir_and_searchpath_are_prechecked_like_hydra_reads_them(tmp_path: Path):
    import json

    conf = user_profiles(tmp_path)
    ok = bench_run(tmp_path, "workload=idle", *SMOKE, "profile=mine", f"hydra.searchpath=[file://{conf}]")
    assert ok.returncode == 0, ok.stderr[-2000:]  # the precheck keeps the searchpath
    assert json.loads((tmp_path / "run" / "results.json").read_text())["guests"][0]["spec"]["profile"] == "mine"
    bad = bench_run(tmp_path / "b", "--config-dir", str(conf), "workload=idle", *SMOKE, "profile=nosuch")
    assert one_error_line(bad).startswith("error: In 'config': Could not find 'profile/nosuch'")
    assert "mine" in bad.stderr  # the user's profile is among the choices
    sweep = bench_run(tmp_path / "s", "-m", "--config-dir", str(conf), "workload=idle", *SMOKE, "profile=mine,nosuch",
                  f"hydra.sweep.dir={tmp_path / 's' / 'sweep'}")
    assert one_error_line(sweep).startswith("error: sweep point profile=nosuch: ")
    assert not (tmp_path / "s" / "sweep").exists()
    missing = bench_run(tmp_path / "m", "--config-dir", str(tmp_path / "none"), *SMOKE)
    assert one_error_line(missing) == f"error: --config-dir {tmp_path / 'none'}: not a directory"


# --- experiment=NAME is the MLflow experiment -------------------------------------------------------------
def test_experiment_names_the_mlflow_experiment(tmp_path: Path):
    import mlflow

    proc = bench_run(tmp_path, "workload=idle", *SMOKE, "experiment=night-run")
    assert proc.returncode == 0, proc.stderr[-2000:]
    mlflow.set_tracking_uri(f"sqlite:///{tmp_path / 'mlflow.db'}")
    assert len(mlflow.search_runs(experiment_names=["night-run"])) == 2  # the scenario and its guest
    old = bench_run(tmp_path / "old", "+experiment=smoke")
    assert one_error_line(old) == ("error: +experiment=smoke: presets are +preset=NAME now (configs/preset/); "
                                   "experiment=NAME names the MLflow experiment")
