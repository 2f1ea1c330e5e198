"""Bad input, round 3 (issue 39): the run directory Hydra really uses, reports and imports that fail in one line,
sweeps that run every point and always end with their summary, overrides Hydra cannot parse, and the smaller cases.

Each test is named after the case it covers; each fails on cfed7fc.
"""

from __future__ import annotations

import csv
import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from suites.config import compose as compose_module
from suites.config.compose import compose_run, without_hydra
from suites.config.schema import register_configs
from suites.pipeline.command_line import CommandLine, parse_command, precheck
from suites.pipeline.hydra_dirs import hydra_node, quoted
from suites.render.tables import unfold

from .helpers import REPO, SMOKE, bench_args, free_port, one_error_line, store_at, wait_while_running
from .test_bad_input import export_doc, git_status

IDLE = (*SMOKE, "workload=idle")  # a whole run in seconds: what these cases need is a run, not a measurement


def bench(tmp: Path, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """The bench CLI as a user types it (flags and overrides in their order), into tmp's own store and cache."""
    own = [f"tracking_uri={store_at(tmp / 'mlflow.db')}", f"artifact_dir={tmp / 'artifacts'}",
           f"data.cache_dir={tmp / 'data'}"]
    return subprocess.run([sys.executable, "-m", "suites.commands.bench", *args, *own], cwd=REPO, capture_output=True,
                          text=True, timeout=timeout, env={**os.environ, "BENCH_DATA_ROOT": str(tmp / "none")})


def digest(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture
def finished_run(tmp: Path) -> Path:
    """A run folder as a finished run leaves it (Hydra's .hydra/, results, a guest log)."""
    run = tmp / "earlier"
    (run / ".hydra").mkdir(parents=True)
    (run / ".hydra" / "config.yaml").write_text("experiment: gpu-mixed-bench\n")
    (run / "results.json").write_text('{"status": "ok", "guests": []}')
    (run / "g0.log").write_text("training started\n")
    return run


# --- 1. the run directory Hydra resolves, whatever the spelling ---------------------------------------------------

@pytest.mark.e2e
@pytest.mark.parametrize("spelling", [["++hydra.run.dir=configs"],
                                      ["hydra.run.dir=outputs/x", "hydra.run.dir=configs"],
                                      ["hydra.run.dir=outputs/../configs"], ["hydra.run.dir='configs'"]])
def test_plusplus_or_repeated_run_dir_in_the_source_tree_is_refused_and_git_stays_clean(tmp: Path,
                                                                                         spelling: list[str]):
    before = git_status()
    proc = bench(tmp, *SMOKE, *spelling)
    assert "hydra.run.dir: " in one_error_line(proc) and "is in the suite's source tree" in proc.stderr
    assert git_status() == before


@pytest.mark.e2e
def test_a_sweep_dir_in_the_source_tree_with_subdir_dot_is_refused_and_git_stays_clean(tmp: Path):
    before = git_status()
    proc = bench(tmp, "-m", *SMOKE, "scenario.guests=1", "hydra.sweep.dir=configs", "hydra.sweep.subdir=.")
    assert one_error_line(proc).startswith("error: hydra.sweep.dir: configs is in the suite's source tree")
    assert git_status() == before


@pytest.mark.e2e
@pytest.mark.parametrize("subdir,says", [(".", "each point needs its own folder directly under hydra.sweep.dir"),
                                         ("../elsewhere", "each point needs its own folder directly under"),
                                         ("same", "sweep points profile=m60-1q and profile=m60-8q would share")])
def test_sweep_subdirs_that_leave_the_sweep_or_share_a_folder_are_refused(tmp: Path, subdir: str, says: str):
    proc = bench(tmp, "-m", *SMOKE, "profile=m60-1q,m60-8q", f"hydra.sweep.dir={tmp / 'sweep'}",
                 f"hydra.sweep.subdir={subdir}")
    assert says in one_error_line(proc)
    assert not (tmp / "sweep").exists() and not (tmp / "elsewhere").exists()


@pytest.mark.e2e
def test_plusplus_run_dir_of_a_finished_run_is_refused_and_its_files_are_byte_identical(tmp: Path,
                                                                                        finished_run: Path):
    before = digest(finished_run)
    proc = bench(tmp, *SMOKE, f"++hydra.run.dir={finished_run}")
    assert "already holds files (.hydra, g0.log, results.json)" in one_error_line(proc)
    assert digest(finished_run) == before


@pytest.mark.e2e
def test_a_sweep_into_a_finished_sweeps_folder_is_refused_and_its_files_are_byte_identical(tmp: Path,
                                                                                           finished_run: Path):
    before = digest(finished_run)
    proc = bench(tmp, "-m", *SMOKE, "profile=m60-1q,m60-8q", f"hydra.sweep.dir={finished_run}")
    assert one_error_line(proc).startswith(f"error: hydra.sweep.dir: {finished_run} already holds files")
    assert digest(finished_run) == before


@pytest.mark.e2e
def test_hydra_output_subdir_outside_the_run_folder_is_refused(tmp: Path):
    before = git_status()
    proc = bench(tmp, *SMOKE, f"hydra.run.dir={tmp / 'run'}", "hydra.output_subdir=../../../../../../../configs")
    assert "hydra.output_subdir: " in one_error_line(proc) and "outside the run's folder" in proc.stderr
    assert git_status() == before and not (tmp / "run").exists()


@pytest.mark.e2e
def test_a_quoted_run_dir_outside_the_tree_is_accepted_and_written_as_hydra_reads_it(tmp: Path):
    """``'hydra.run.dir="/tmp/zz/a b"'`` used to be refused as inside the source tree."""
    where = tmp / "zz" / "a b"
    proc = bench(tmp, *IDLE, f'hydra.run.dir="{where}"')
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert (where / "results.json").is_file() and (where / ".hydra" / "config.yaml").is_file()


def test_the_pinned_run_dir_reads_back_verbatim_through_hydras_grammar():
    from hydra.core.override_parser.overrides_parser import OverridesParser

    parser = OverridesParser.create()
    for value in ["/tmp/a b", "/tmp/c'd", "/tmp/e\\f", "/tmp/x\\", "a\\'b", '"q"', "/t/=,[]{}", "/tmp/é"]:
        assert parser.parse_override(f"hydra.run.dir={quoted(value)}").value() == value, value


# --- 2. report and sync: one line, exit 2 -----------------------------------------------------------------------

def report(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "suites.commands.report", *args], cwd=REPO, capture_output=True,
                          text=True, timeout=120)


@pytest.mark.e2e
def test_report_against_an_unreachable_server_is_one_line_within_30_s(tmp: Path):
    started = time.monotonic()
    proc = report("--tracking-uri", f"http://127.0.0.1:{free_port()}", "--out", str(tmp / "report"))
    assert time.monotonic() - started < 30
    assert "store not readable" in one_error_line(proc)


@pytest.mark.e2e
@pytest.mark.parametrize("flag", ["--mixed-run", "--consolidation-run", "--study"])
def test_report_of_an_unknown_run_id_is_one_line(tmp: Path, flag: str):
    uri = store_at(tmp / "mlflow.db")
    proc = report("--tracking-uri", uri, flag, "deadbeef", "--out", str(tmp / "report"))
    assert one_error_line(proc) == f"error: {flag} deadbeef: no such run in this store"


@pytest.mark.e2e
def test_report_mixed_run_of_a_plain_single_run_says_what_the_run_is(tmp: Path):
    from suites.record.store import Tracker

    uri = store_at(tmp / "mlflow.db")
    tracker = Tracker(uri, "gpu-mixed-bench", tmp / "artifacts")
    run_id = tracker.start("single-m60-8q-mnist-torch", {"bench.role": "scenario"})
    tracker.end(run_id, "FINISHED")
    proc = report("--tracking-uri", uri, "--mixed-run", run_id, "--out", str(tmp / "report"))
    assert one_error_line(proc) == (f"error: --mixed-run {run_id}: run 'single-m60-8q-mnist-torch' is a scenario "
                                    "run, not a mixed comparison; leave --mixed-run out for the latest mixed run")
    assert not (tmp / "report").exists()


@pytest.mark.e2e
def test_sync_to_an_unreachable_server_exits_2_in_one_line(tmp: Path):
    fallback = store_at(tmp / "fallback.db")
    proc = subprocess.run([sys.executable, "-m", "suites.commands.sync", "--from", fallback, "--to",
                           f"http://127.0.0.1:{free_port()}"], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert "tracking server unreachable" in one_error_line(proc)


@pytest.mark.e2e
def test_sync_run_dir_with_a_duplicated_run_entry_is_refused(tmp: Path):
    doc = export_doc()
    doc["runs"].append(dict(doc["runs"][1]))
    folder = tmp / "study" / "mlflow-export"
    folder.mkdir(parents=True)
    (folder / "runs.json").write_text(json.dumps(doc))
    proc = subprocess.run([sys.executable, "-m", "suites.commands.sync", "--run-dir", str(tmp / "study"), "--to",
                           f"sqlite:///{tmp / 'team.db'}"], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert f"runs[2].run_id: {'b' * 32} is listed twice (runs[1] too)" in one_error_line(proc)
    assert not (tmp / "team.db").exists()


@pytest.mark.e2e
def test_a_newline_in_experiment_is_refused(tmp: Path):
    proc = bench(tmp, *SMOKE, f"hydra.run.dir={tmp / 'run'}", "experiment='a\nb'")
    assert "experiment: 'a\\nb': no newline or control character" in one_error_line(proc)
    sync = subprocess.run([sys.executable, "-m", "suites.commands.sync", "--experiment", "a\nb"], cwd=REPO,
                          capture_output=True, text=True, timeout=120)
    assert sync.returncode == 2 and "no newline or control character" in sync.stderr


# --- 3. a sweep runs every point and always ends with its summary ----------------------------------------------------

def summary(sweep: Path) -> list[dict[str, str]]:
    return list(csv.DictReader((sweep / "sweep_summary.csv").open()))


@pytest.mark.e2e
def test_a_sweep_runs_every_point_past_a_refused_one_and_says_which(tmp: Path):
    """``scenario.guests=1,12,1``: point 1 used to end the sweep (exit 2, unnamed), point 2 never ran, no summary."""
    sweep = tmp / "sweep"
    proc = bench(tmp, "-m", *IDLE, "scenario.guests=1,12,1", f"hydra.sweep.dir={sweep}", timeout=600)
    assert proc.returncode == 1, proc.stderr[-3000:]
    assert "error: sweep job 1 (scenario.guests=12): refused: 12 guest(s)" in proc.stderr
    rows = summary(sweep)
    assert [(r["job"], r["point"], r["status"]) for r in rows] == [
        ("0", "scenario.guests=1", "ok"), ("1", "scenario.guests=12", "refused"), ("2", "scenario.guests=1", "ok")]
    assert "12 vCPUs > " in rows[1]["reason"] and (sweep / "sweep_summary.png").is_file()
    assert "note: job 1 (scenario.guests=12): refused: " in proc.stdout
    said = unfold(proc.stdout)  # lines folded at 120 columns, read whole
    assert "sweep summary: " in said and "(MLflow run " in said, proc.stdout[-2000:]


@pytest.mark.e2e
def test_a_sweep_interrupted_during_its_last_point_writes_the_summary_of_the_points_that_finished(tmp: Path):
    sweep = tmp / "sweep"
    command = bench_args(tmp, *SMOKE, "workload=idle", "workload.seconds=1,120",
                         f"hydra.sweep.dir={sweep}")[0]
    args = [*command[:3], "-m", *(a for a in command[3:] if not a.startswith("hydra.run.dir="))]
    proc = subprocess.Popen(args, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "BENCH_DATA_ROOT": str(tmp / "none")})
    try:
        wait_while_running(proc, (sweep / "1" / "g0.log").exists, 300, "the last point never started")
        time.sleep(2)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err[-3000:]
    rows = summary(sweep)
    assert [(r["job"], r["point"], r["status"]) for r in rows] == [("0", "workload.seconds=1", "ok"),
                                                                   ("1", "workload.seconds=120", "interrupted")]
    assert "sweep summary: " in unfold(out), out[-2000:]


# --- 4. an override Hydra cannot parse ---------------------------------------------------------------------------

@pytest.mark.e2e
@pytest.mark.parametrize("given,hint", [("experiment=é", "experiment='é'"), ("data.root=/tmp/é", "data.root='/tmp/é'"),
                                        ("hydra.run.dir=/tmp/zz/é", "hydra.run.dir='/tmp/zz/é'"),
                                        ("++hydra.run.dir=/tmp/é", "++hydra.run.dir='/tmp/é'")])
def test_an_unparseable_override_gets_one_line_naming_the_key_and_the_quote_fix(tmp: Path, given: str, hint: str):
    proc = bench(tmp, *SMOKE, given)
    assert one_error_line(proc).endswith(f"cannot be parsed as written; quote the value: {hint}")


def test_the_quoted_non_ascii_value_the_hint_gives_is_accepted(tmp: Path):
    register_configs()
    checked = precheck(parse_command([*SMOKE, "experiment='é'", f"data.cache_dir={tmp / 'd'}",
                                      f"artifact_dir={tmp / 'a'}", f"tracking_uri=sqlite:///{tmp / 'm.db'}",
                                      f"hydra.run.dir='{tmp / 'é'}'"]))
    try:
        assert checked.composed is not None and checked.composed.cfg.experiment == "é"
        assert checked.dirs.run_dir == tmp / "é" and (tmp / "é").is_dir()
    finally:
        assert checked.claim is not None
        checked.claim.release()


@pytest.mark.parametrize("multirun", [False, True])
def test_the_precheck_composes_each_run_once_with_hydras_node(tmp: Path, monkeypatch: pytest.MonkeyPatch,
                                                              multirun: bool):
    """The config that runs and the folder it writes come from one composition per run (or sweep point): each is
    0.3 s of CPU in every bench command, and Hydra composes twice more on its own."""
    calls = []
    real = compose_module.hydra_compose
    monkeypatch.setattr(compose_module, "hydra_compose", lambda *a, **k: calls.append(k) or real(*a, **k))
    register_configs()
    own = [f"data.cache_dir={tmp / 'd'}", f"artifact_dir={tmp / 'a'}", f"tracking_uri=sqlite:///{tmp / 'm.db'}"]
    line = parse_command(["-m", *SMOKE, "seed=1,2", *own, f"hydra.sweep.dir={tmp / 's'}"] if multirun
                         else [*SMOKE, *own, f"hydra.run.dir={tmp / 'r'}"])
    checked = precheck(line)
    try:
        assert len(calls) == (2 if multirun else 1) and all(k["return_hydra_config"] for k in calls)
        if not multirun:
            assert checked.composed is not None and "hydra" not in checked.composed.dcfg
            assert checked.dirs.run_dir == tmp / "r"
        else:
            assert checked.dirs.sweep_dir == tmp / "s" and checked.named == [["seed=1"], ["seed=2"]]
    finally:
        assert checked.claim is not None
        checked.claim.release()


@pytest.mark.parametrize("overrides", [[*SMOKE], [*SMOKE, "scenario=gpu-vs-cpu"], ["scenario=mixed", "profile=m60-8q"],
                                       ["workload=graphics-replay", "profile=m60-1q", "hydra.run.dir=/tmp/zz/r"]])
def test_the_config_read_from_hydras_node_is_the_plain_composition(overrides: list[str]):
    """What the precheck runs (one composition with Hydra's node, the node dropped) is what composing without the
    node gives: the run's config, each phase's and the recorded config.yaml alike."""
    register_configs()
    plain = compose_run(overrides)
    node = hydra_node(overrides)
    read = compose_run(overrides, without_hydra(node))
    assert "hydra" in node and read.cfg == plain.cfg
    assert [OmegaConf.to_yaml(r.dcfg) for r in read.runs] == [OmegaConf.to_yaml(r.dcfg) for r in plain.runs]
    assert OmegaConf.to_yaml(read.dcfg) == OmegaConf.to_yaml(plain.dcfg) and OmegaConf.is_struct(read.dcfg)


def test_hydra_flags_with_a_value_are_not_taken_for_overrides():
    assert parse_command(["--cfg", "job", "-p", "scenario", "--info", "searchpath", "x=1"]) == \
        CommandLine(["x=1"], informational=True)


# --- 5. the smaller ones ---------------------------------------------------------------------------------------

@pytest.mark.e2e
def test_a_refused_run_leaves_no_folder_it_made(tmp: Path):
    """``strict=true hydra.run.dir=/tmp/zq/x/y`` on a host without a GPU used to leave /tmp/zq/x."""
    proc = bench(tmp, *SMOKE, "strict=true", f"hydra.run.dir={tmp / 'zq' / 'x' / 'y'}")
    assert "strict=true" in one_error_line(proc)
    assert not (tmp / "zq").exists()


@pytest.mark.e2e
def test_a_half_written_run_is_named_by_the_next_run_once(tmp: Path):
    killed = tmp / "runs" / "2026-01-01_00-00-00.000-1"
    (killed / ".hydra").mkdir(parents=True)
    (killed / ".hydra" / "config.yaml").write_text("experiment: gpu-mixed-bench\n")
    (killed / "bench.log").write_text("")
    said = f"note: {killed}: no results.json: a run that was killed?"
    nxt = bench(tmp, *IDLE, f"hydra.run.dir={tmp / 'runs' / 'next'}")
    assert nxt.returncode == 0 and said in nxt.stdout, nxt.stderr[-2000:]
    later = bench(tmp, *SMOKE, "strict=true", f"hydra.run.dir={tmp / 'runs' / 'later'}")
    assert later.returncode == 2 and "no results.json" not in later.stdout + later.stderr


@pytest.mark.e2e
def test_after_a_fall_back_the_browse_hint_names_the_fallback_store(tmp: Path):
    from suites.config.compose import compose
    from suites.record.recorder import Recorder

    register_configs()
    fallback = f"sqlite:///{tmp / 'fallback.db'}"
    cfg, _ = compose([f"tracking_uri=http://127.0.0.1:{free_port()}", f"fallback_tracking_uri={fallback}",
                      f"artifact_dir={tmp / 'art'}"])
    said: list[str] = []
    recorder = Recorder(cfg, said.append)
    assert any("recording to the fallback store" in s for s in said), said
    assert recorder.browse() == f"`make ui URI={fallback}` to browse"  # `make ui` alone opens outputs/mlflow.db


@pytest.mark.e2e
def test_make_ui_opens_the_store_named_by_uri():
    dry = subprocess.run(["make", "-n", "ui", "URI=sqlite:////tmp/x.db"], cwd=REPO, capture_output=True, text=True,
                         timeout=60).stdout
    assert "--backend-store-uri 'sqlite:////tmp/x.db'" in dry, dry


@pytest.mark.e2e
def test_make_study_gives_the_same_quote_hint(tmp: Path):
    proc = subprocess.run([sys.executable, "-m", "suites.study.command", "--plan", "experiment=é"], cwd=REPO,
                          capture_output=True, text=True, timeout=120)
    assert one_error_line(proc) == "error: experiment: the value é cannot be parsed as written; quote the value: " \
                                   "experiment='é'"


@pytest.mark.e2e
def test_report_of_a_store_that_is_not_there_is_one_line_and_makes_none(tmp: Path):
    proc = report("--tracking-uri", f"sqlite:///{tmp / 'none.db'}", "--out", str(tmp / "report"))
    assert one_error_line(proc).startswith(f"error: --tracking-uri sqlite:///{tmp / 'none.db'}: no store at ")
    assert not (tmp / "none.db").exists()
