"""Bad input, round 4 (issue 53): imports that are all or nothing, nothing written into the source tree, a
measurement that survives a full disk. Each test is named after the case it covers; each fails on 5fed0b2.

(The round's other cases are tested beside the code they guard: test_vm_driver.py (a GRID .run is data),
test_makefile.py (make variables are text), test_config_errors.py (one line, not a traceback).)"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from suites.render.tables import unfold

from .helpers import REPO, one_error_line
from .test_bad_input import export_doc, git_status

ROOT, CHILD = "a" * 32, "b" * 32


def export(tmp_path: Path, doc: dict | None = None) -> Path:
    folder = tmp_path / "study" / "mlflow-export"
    (folder / "artifacts" / CHILD).mkdir(parents=True, exist_ok=True)
    (folder / "artifacts" / CHILD / "notes.txt").write_text("a part's notes\n")
    (folder / "runs.json").write_text(json.dumps(doc or export_doc()))
    return folder


def runs_in(db: Path) -> list[tuple[str, str]]:
    """(run name, status) of every active run in store ``db``."""
    from mlflow.tracking import MlflowClient

    if not db.exists():
        return []
    client = MlflowClient(f"sqlite:///{db}")
    exps = [e.experiment_id for e in client.search_experiments()]
    return sorted((r.info.run_name, r.info.status) for r in client.search_runs(exps))


def sync(folder: Path, db: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "suites.commands.sync", "--run-dir", str(folder), "--to",
                           f"sqlite:///{db}"], cwd=REPO, capture_output=True, text=True, timeout=300)


@pytest.mark.e2e
def test_sync_of_an_export_with_a_link_loop_is_one_short_line_and_imports_nothing(tmp_path: Path):
    folder = export(tmp_path)
    (folder / "artifacts" / CHILD / "loop").symlink_to(".")  # points inside the export: passed the old check
    proc = sync(tmp_path / "study", tmp_path / "team.db")
    line = one_error_line(proc)
    assert line.startswith("error: ") and len(line) <= 300
    assert f"a link inside the export (it holds files only; not imported): artifacts/{CHILD}/loop -> " in line
    assert runs_in(tmp_path / "team.db") == []
    (folder / "artifacts" / CHILD / "loop").unlink()
    ok = sync(tmp_path / "study", tmp_path / "team.db")
    assert ok.returncode == 0, ok.stderr[-2000:]
    assert runs_in(tmp_path / "team.db") == [("part", "FINISHED"), ("study", "FINISHED")]


@pytest.mark.e2e
def test_sync_of_a_child_with_a_bad_timestamp_imports_nothing_and_the_fixed_export_imports_whole(tmp_path: Path):
    doc = export_doc()
    doc["runs"][1]["start_time"] = -1
    export(tmp_path, doc)
    line = one_error_line(sync(tmp_path / "study", tmp_path / "team.db"))
    assert "runs[1].start_time: must be epoch milliseconds (2000 to 2100), got -1" in line
    assert runs_in(tmp_path / "team.db") == []
    export(tmp_path)
    assert sync(tmp_path / "study", tmp_path / "team.db").returncode == 0
    assert runs_in(tmp_path / "team.db") == [("part", "FINISHED"), ("study", "FINISHED")]
    again = sync(tmp_path / "study", tmp_path / "team.db")
    assert "already imported" in again.stdout and len(runs_in(tmp_path / "team.db")) == 2


def test_an_import_that_fails_part_way_is_rolled_back_and_a_retry_imports_it_whole(tmp_path: Path,
                                                                                 monkeypatch: pytest.MonkeyPatch):
    """A failure the checks cannot foresee (the target refuses the child's artifacts): the root copied before it
    is deleted again, so the retry is not told `already imported`."""
    from mlflow.tracking import MlflowClient

    from suites.record import ingest

    export(tmp_path)
    db = tmp_path / "team.db"
    real = MlflowClient.log_artifacts

    def refuses(self: MlflowClient, run_id: str, local_dir: str, artifact_path: str | None = None) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(MlflowClient, "log_artifacts", refuses)
    with pytest.raises(OSError, match="No space left"):
        ingest.import_export(tmp_path / "study", f"sqlite:///{db}")
    assert runs_in(db) == []
    monkeypatch.setattr(MlflowClient, "log_artifacts", real)
    done = ingest.import_export(tmp_path / "study", f"sqlite:///{db}")
    assert len(done.done) == 1 and runs_in(db) == [("part", "FINISHED"), ("study", "FINISHED")]
    assert (tmp_path / "mlartifacts").is_dir()  # beside the target store, not the working directory's outputs/


def test_a_half_import_left_by_a_killed_sync_is_replaced_by_the_retry(tmp_path: Path):
    from mlflow.tracking import MlflowClient

    from suites.record import ingest

    export(tmp_path)
    uri = f"sqlite:///{tmp_path / 'team.db'}"
    exp_id = ingest.Tracker(uri, ingest.EXPERIMENT, artifact_root=ingest.artifact_root(uri)).experiment_id
    MlflowClient(uri).create_run(exp_id, run_name="study", tags={"bench.imported_from": ROOT,
                                                                 ingest.IMPORT_OF: ROOT})  # never marked done
    assert len(ingest.import_export(tmp_path / "study", uri).done) == 1
    assert runs_in(tmp_path / "team.db") == [("part", "FINISHED"), ("study", "FINISHED")]


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


@pytest.mark.e2e
@pytest.mark.parametrize("name", sorted(PATH_OPTIONS))
def test_no_path_option_of_any_command_writes_into_the_source_tree(name: str):
    proc = subprocess.run([sys.executable, "-m", "suites", *PATH_OPTIONS[name]], cwd=REPO, capture_output=True,
                          text=True, timeout=120)
    line = one_error_line(proc)
    assert "is in the suite's source tree" in line and "configs/written-by-a-test" in line, line
    assert not (REPO / INSIDE).exists()


@pytest.mark.e2e
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


@pytest.mark.e2e
def test_report_out_into_a_run_folder_is_refused_and_into_a_report_folder_is_taken(tmp_path: Path):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "results.json").write_text("{}")
    (tmp_path / "empty.db").write_bytes(b"")
    proc = subprocess.run([sys.executable, "-m", "suites", "report", "--out", str(run_dir)], cwd=REPO,
                          capture_output=True, text=True, timeout=120)
    assert f"--out {run_dir}: holds results.json, not a report" in one_error_line(proc)
    assert [p.name for p in run_dir.iterdir()] == ["results.json"]
    proc = subprocess.run([sys.executable, "-m", "suites", "report", "--tracking-uri",
                           f"sqlite:///{tmp_path / 'empty.db'}"], cwd=REPO, capture_output=True, text=True,
                          timeout=120)
    assert "no store at" in one_error_line(proc) and (tmp_path / "empty.db").stat().st_size == 0  # not written


@pytest.mark.e2e
def test_the_first_command_beside_another_run_waits_for_its_cores_by_default_and_finishes(tmp_path: Path):
    """A newcomer's `make bench profile=m60-8q` on a host where another run holds the cores was refused; now it
    waits (wait_for_cores_s defaults to 600 s), says so naming the holder, and runs once the cores are free."""
    import os

    from suites.backends import corelock

    from .helpers import SMOKE, bench_args, over_width

    lease = corelock.CoreLease("outputs/runs/the-other-run").acquire(sorted(os.sched_getaffinity(0)))
    args, run_dir, _ = bench_args(tmp_path, "profile=m60-8q", *SMOKE, "workload=idle", "workload.seconds=1")
    env = {k: v for k, v in os.environ.items() if k != "BENCH_WAIT_FOR_CORES_S"}  # the product's default
    err = tmp_path / "stderr"
    with err.open("w") as err_file:
        proc = subprocess.Popen(args, cwd=REPO, stdout=subprocess.PIPE, stderr=err_file, text=True, env=env)
    lines: list[str] = []
    try:  # the other run frees its cores once this one has said it waits (not after a guessed start-up time)
        for line in proc.stdout:
            lines.append(line)
            if line.startswith("waiting for cores:"):
                lease.release()
        proc.wait(timeout=300)
    finally:
        lease.release()
        proc.kill()
    stdout = "".join(lines)
    assert proc.returncode == 0, err.read_text()[-2000:]
    said = unfold(stdout)  # the holder's command line is as long as its host makes it: the line may fold
    assert "waiting for cores: 0 s of 600 s (wait_for_cores_s); held by cores " in said
    assert "run dir outputs/runs/the-other-run" in said and (run_dir / "results.json").is_file()
    assert over_width(stdout) == []


@pytest.fixture
def small_disk(tmp_path: Path):
    """A 24 MiB tmpfs of this test's own (the suite's tests run as root on hosts of this kind)."""
    disk = tmp_path / "disk"
    disk.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=24m", "tmpfs", str(disk)], check=True, capture_output=True)
    try:
        yield disk
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False, capture_output=True)


def fill(disk: Path) -> None:
    """Every byte of ``disk`` taken (the write that finds it full ends the filling)."""
    try:
        with (disk / "filler").open("wb") as f:
            while True:
                f.write(b"\0" * 2**20)
    except OSError:
        pass


@pytest.mark.e2e
def test_a_disk_that_fills_during_a_run_loses_no_measurement(tmp_path: Path, small_disk: Path):
    """Serious case 5: the free-space check runs at the start only; a disk full by the end was an ENOSPC
    traceback, with no results.json and no MLflow run although the figures were in memory."""
    import os
    import time

    from .helpers import SMOKE, bench_args

    args, run_dir, uri = bench_args(tmp_path, *SMOKE, "workload=idle", "workload.seconds=3",
                                    f"hydra.run.dir={small_disk / 'run'}")
    env = {**os.environ, "TMPDIR": str(tmp_path / "tmp")}
    (tmp_path / "tmp").mkdir()
    proc = subprocess.Popen(args, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    deadline = time.monotonic() + 120
    while not (small_disk / "run" / "g0.log").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    fill(small_disk)
    out, err = proc.communicate(timeout=300)
    assert "Traceback" not in out + err, err[-3000:]
    rescued = list((tmp_path / "tmp").glob("gpu-mixed-bench-rescued/*/results.json"))
    assert len(rescued) == 1, out + err
    results = json.loads(rescued[0].read_text())
    assert results["guests"][0]["result"]["status"] == "ok"
    assert any("No space left on device" in r and str(rescued[0].parent) in r for r in results["reasons"])
    assert f"results.json could not be written in {small_disk / 'run'} (No space left on device); kept in " \
        f"{rescued[0].parent}" in unfold(out)  # as said, its lines folded at 120 columns read whole
    from mlflow.tracking import MlflowClient

    client = MlflowClient(uri)
    runs = client.search_runs([e.experiment_id for e in client.search_experiments()],
                              "tags.`bench.role` != 'guest'")
    assert len(runs) == 1 and "No space left on device" in runs[0].data.tags["bench.failure"]
    assert "results.json" in {a.path for a in client.list_artifacts(runs[0].info.run_id)}


def test_where_neither_the_run_folder_nor_the_rescue_folder_takes_the_results_the_figures_are_said(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    from suites.record import recorder as recorder_module
    from suites.record.recorder import Recorder
    from suites.render.tables import figures_line

    from .test_plots import outcome

    blocked = tmp_path / "a-file"
    blocked.write_text("")
    monkeypatch.setattr(recorder_module, "rescue_dir", lambda run_dir: blocked / "rescued")  # not makeable either
    said: list[str] = []
    recorder = Recorder.__new__(Recorder)
    recorder.say = said.append
    o = outcome(guests=2)
    o.guests[0].result.metrics = {"images_per_sec": 1234.5, "test_accuracy": 0.991}
    assert recorder.local(o, blocked / "run") is None
    assert "results.json could not be written in" in o.reasons[-1] and f"nor in {blocked}/" in o.reasons[-1]
    assert said == [f"warning: {o.reasons[-1]}"]
    assert figures_line(o).startswith("g0 cifar10-torch ok: images_per_sec=1234.5, test_accuracy=0.991; g1 ")


@pytest.mark.e2e
@pytest.mark.parametrize("args, says", [
    (["bench", "-cd"], "error: -cd: needs a folder"),  # took the internal run-dir pin as its value
    (["bench", "hydra.run.dir='/tmp/a\nb'"], "holds a control character (a newline?)"),
    (["bench", "experiment=a'b\"é"], "quote the value: experiment='a\\'b\"é'"),  # the hint itself parses
    (["report", "--mixed-run", "../../etc"], "--mixed-run '../../etc': not an MLflow run id"),
    (["bench-vm", "--vms", "100000"], "--vms 100000: 100000 VMs x 2048 MiB is more than this host's memory"),
])
def test_the_rounds_smaller_cases_are_one_line_before_anything_starts(tmp_path: Path, args: list[str], says: str):
    proc = subprocess.run([sys.executable, "-m", "suites", *args], cwd=tmp_path, capture_output=True, text=True,
                          timeout=120, env={**__import__("os").environ, "PYTHONPATH": str(REPO)})
    assert says in one_error_line(proc)
    assert "bench-vm:" not in proc.stdout  # bench-vm said nothing of a round: nothing started
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_the_quote_hint_for_a_value_with_both_quotes_is_what_hydra_reads_back():
    from hydra.core.override_parser.overrides_parser import OverridesParser

    from suites.pipeline.prechecks import unparseable

    hint = unparseable("experiment=a'b\"é", ValueError("x")).split("quote the value: ", 1)[1]
    assert OverridesParser.create().parse_override(hint).value() == "a'b\"é"


@pytest.mark.e2e
def test_sync_from_a_truncated_store_names_the_source_and_report_reads_no_empty_store(tmp_path: Path):
    (tmp_path / "fallback.db").write_bytes(b"SQLite format 3\0"[:7] + b"\0" * 90)
    proc = subprocess.run([sys.executable, "-m", "suites", "sync", "--from", f"sqlite:///{tmp_path / 'fallback.db'}",
                           "--to", f"sqlite:///{tmp_path / 'team.db'}"], cwd=REPO, capture_output=True, text=True,
                          timeout=120)
    assert f"--from sqlite:///{tmp_path / 'fallback.db'}: {tmp_path / 'fallback.db'} is not an MLflow store" \
        in one_error_line(proc)
    assert not (tmp_path / "team.db").exists()


def test_a_vm_run_asking_for_a_driver_without_its_image_is_told_the_build_with_that_driver(tmp_path: Path):
    from suites.backends.vm.backend import image_for
    from suites.config.schema import VmConfig
    from suites.errors import ConfigError

    with pytest.raises(ConfigError, match=r"build it with `make setup-vm VM_DRIVER=open`"):
        image_for(VmConfig(guest_driver="open", image_dir=str(tmp_path / "none")))
