"""Cases from the hostile run (issue "Reliability and security"), each named after its number there.

Bad input is one ``error:`` line, exit 2, nothing started and nothing written; two runs never share what they
record. ``pytest tests/test_hostile.py`` runs on its own in well under the issue's three minutes.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from .helpers import REPO, SMOKE, bench_args, one_error_line, runs_of, training, wait_for, with_fault


def command(tmp: Path, *overrides: str, fresh_store: bool = False) -> list[str]:
    """bench_args' command line (a key ``overrides`` sets replaces bench_args' own: a run or cache dir)."""
    return bench_args(tmp, *overrides, fresh_store=fresh_store)[0]


def bench(tmp: Path, *overrides: str, timeout: float = 120, fresh_store: bool = False) -> \
        subprocess.CompletedProcess[str]:
    return subprocess.run(command(tmp, *overrides, fresh_store=fresh_store), cwd=REPO, capture_output=True,
                          text=True, timeout=timeout, env={**os.environ, "BENCH_DATA_ROOT": str(tmp / "no-real-data")})


@pytest.mark.e2e
@pytest.mark.parametrize("key, where, says", [
    ("hydra.run.dir", "file/run", "hydra.run.dir: {tmp}/file/run cannot be created ({tmp}/file is not a directory)"),
    ("hydra.run.dir", "file/runs/${run_stamp:}", "hydra.run.dir: {tmp}/file/runs/<stamp> cannot be created ({tmp}/file "
                                                 "is not a directory)"),
    ("data.cache_dir", "file/data", "data.cache_dir: {tmp}/file/data cannot be created ({tmp}/file is not a "
                                    "directory)"),
])
def test_case_13_an_unusable_run_or_cache_directory_is_one_line(tmp_path: Path, key: str, where: str, says: str):
    (tmp_path / "file").write_text("a file where a directory should be")
    proc = bench(tmp_path, *SMOKE, f"{key}={tmp_path / where}", fresh_store=True)
    line = re.sub(r"/runs/[0-9_.-]+ ", "/runs/<stamp> ", one_error_line(proc))  # the stamp Hydra would use
    assert line == f"error: {says.format(tmp=tmp_path)}"
    assert not (tmp_path / "mlflow.db").exists() and not (tmp_path / "run").exists()


@pytest.mark.e2e
def test_case_1_two_runs_started_in_the_same_second_get_their_own_directories(tmp_path: Path):
    """The default run directory is ${run_stamp:} (time, milliseconds, pid): two runs at once, two directories,
    each with its own results and guest log."""
    hydra_cfg = subprocess.run([*command(tmp_path)[:3], "--cfg", "hydra"], cwd=REPO, capture_output=True, text=True,
                               timeout=60).stdout
    assert "dir: outputs/runs/${run_stamp:}" in hydra_cfg and "dir: outputs/sweeps/${run_stamp:}" in hydra_cfg
    runs = []
    for i in range(2):
        args = command(tmp_path / f"store{i}", *SMOKE, f"hydra.run.dir={tmp_path}/runs/${{run_stamp:}}")
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


@pytest.mark.e2e
def test_case_11_a_pixel_mismatch_is_status_mismatch_in_results_table_and_mlflow(tmp_path: Path):
    """strict=false still reports the run, but a wrong picture is never an `ok` viewset."""
    import json

    import mlflow

    from .test_graphics import golden_with_a_wrong_frame

    gold, _ = golden_with_a_wrong_frame(tmp_path)
    proc = bench(tmp_path, "workload=graphics-replay", "workload.frames_per_test=8", "progress=quiet",
                 "workload.viewsets=[product,architecture]", f"workload.golden_dir={gold}", timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    guest = json.loads((tmp_path / "run" / "results.json").read_text())["guests"][0]
    assert guest["result"]["info"]["product.status"] == "mismatch"
    assert guest["result"]["info"]["architecture.status"] == "ok"
    row = next(ln for ln in proc.stdout.splitlines() if "│ product" in ln)
    assert "mismatch" in row and "│ ok" not in row
    mlflow.set_tracking_uri(f"sqlite:///{tmp_path / 'mlflow.db'}")
    runs = mlflow.search_runs(experiment_names=["gpu-mixed-bench"])
    child = runs[runs["tags.bench.role"] == "guest"].iloc[0]
    assert child["tags.bench.viewset.product"] == "mismatch" and child["tags.bench.pixels"] == "mismatch"
    assert child["tags.bench.viewset.architecture"] == "ok"


def cifar_with(tmp: Path, name: str, payload: object | None = None, raw: bytes | None = None) -> Path:
    """Synthetic CIFAR-10 whose batch ``name`` holds ``payload`` (pickled) and whose manifest vouches for it."""
    import pickle

    from suites.data import cifar

    folder = cifar.synthesize(tmp, 50, 20) / cifar.FOLDER
    (folder / name).write_bytes(raw if raw is not None else pickle.dumps(payload, protocol=4))
    lines = [f"{cifar.md5(folder / n)}  {n}" for n in [*cifar.TRAIN, "test_batch", "batches.meta"]]
    (folder / cifar.MANIFEST).write_text("\n".join(lines) + "\n")
    return tmp


def _rows(n: int, width: int = 3072, dtype: str = "uint8") -> object:
    import numpy as np

    return np.zeros((n, width), dtype=dtype)


CIFAR_CASES = {  # case 10: batches that pass the MD5 and unpickler gates but are not CIFAR-10
    "not-a-dict": (lambda: [1, 2, 3], "not a CIFAR-10 batch (a dict with data and labels), got list"),
    "label-99": (lambda: {b"data": _rows(4), b"labels": [1, 2, 99, 3]},
                 "1 label(s) outside the classes 0..9 (e.g. 99)"),
    "row-size": (lambda: {b"data": _rows(4, 3000), b"labels": [1, 2, 3, 4]}, "rows of 3072 values"),
    "object-dtype": (lambda: {b"data": _rows(4, dtype="object"), b"labels": [1] * 4}, "must be uint8 rows"),
    "float-dtype": (lambda: {b"data": _rows(4, dtype="float64"), b"labels": [1] * 4}, "must be uint8 rows"),
    "label-count": (lambda: {b"data": _rows(4), b"labels": [1, 2]}, "2 labels for 4 images"),
    "label-text": (lambda: {b"data": _rows(2), b"labels": [b"cat", b"dog"]}, "labels are not integers"),
}


@pytest.mark.parametrize("case", sorted(CIFAR_CASES))
def test_case_10_cifar_batches_that_are_not_cifar_are_refused_before_start(tmp_path: Path, case: str):
    from suites.data import cifar
    from suites.data.options import DataConfig
    from suites.errors import DataError

    payload, says = CIFAR_CASES[case]
    root = cifar_with(tmp_path / "data", "test_batch", payload())
    with pytest.raises(DataError, match=re.escape(says)):
        cifar.resolve(DataConfig(root=str(root), cache_dir=str(tmp_path)))


@pytest.mark.e2e
def test_case_10_a_garbage_manifest_or_a_directory_batch_is_one_line(tmp_path: Path):
    from suites.data import cifar

    root = cifar_with(tmp_path / "data", "test_batch", {b"data": _rows(2), b"labels": [1, 2]})
    (root / cifar.FOLDER / cifar.MANIFEST).write_text("garbage\n")
    proc = bench(tmp_path, "workload=cifar10-torch", *SMOKE, f"data.root={root}")
    assert "not a checksum manifest" in one_error_line(proc)
    cifar_with(tmp_path / "data", "test_batch", {b"data": _rows(2), b"labels": [1, 2]})
    (root / cifar.FOLDER / "test_batch").unlink()
    (root / cifar.FOLDER / "test_batch").mkdir()
    proc = bench(tmp_path, "workload=cifar10-torch", *SMOKE, f"data.root={root}")
    assert "test_batch is a directory, not a regular file" in one_error_line(proc)
    assert not (tmp_path / "run").exists()


@pytest.mark.e2e
def test_case_17_a_guest_over_its_memory_during_set_up_is_stopped_before_the_barrier(tmp_path: Path):
    import json

    proc = bench(tmp_path, *SMOKE, "profile.memory_MiB=300", timeout=300)  # importing torch alone takes more
    assert proc.returncode == 1, proc.stderr[-2000:]
    result = json.loads((tmp_path / "run" / "results.json").read_text())["guests"][0]["result"]
    assert result["status"] == "failed" and "guest memory exceeded during set-up: RSS" in result["error"]
    assert result["t_train_start"] is None  # stopped before it was released, not after


@pytest.mark.e2e
def test_case_3_a_store_that_fails_half_way_keeps_no_running_half_run(tmp_path: Path):
    """The store takes the run, then fails on its artifacts (here: an artifact root that became a file once the run
    had started, as a full disk would fail it): the half-run is FAILED and says where the whole record is, not left
    RUNNING. (An artifact root under a file before the run is refused up front: tests/test_bad_input.py.)"""
    import mlflow

    args, _, _ = bench_args(tmp_path, *SMOKE, f"artifact_dir={tmp_path / 'file' / 'artifacts'}",
                            f"fallback_tracking_uri=sqlite:///{tmp_path / 'fallback.db'}")
    proc = subprocess.run(with_fault(args, files=(tmp_path / "file",)), cwd=REPO, capture_output=True, text=True,
                          timeout=300, env={**os.environ, "BENCH_DATA_ROOT": str(tmp_path / "none")})
    assert proc.returncode == 1 and "MLflow" in proc.stdout, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert '"status": "ok"' in (tmp_path / "run" / "results.json").read_text()  # measured, kept
    for store in ("mlflow.db", "fallback.db"):
        mlflow.set_tracking_uri(f"sqlite:///{tmp_path / store}")
        runs = mlflow.search_runs(experiment_names=["gpu-mixed-bench"])
        scenario = runs[runs["tags.bench.role"] == "scenario"]
        assert len(scenario) == 1 and scenario.iloc[0]["status"] == "FAILED", (store, runs["status"].tolist())
        assert "recording failed here" in scenario.iloc[0]["tags.bench.incomplete"]


@pytest.mark.e2e
def test_case_14_every_sweep_point_is_prechecked_before_any_job(tmp_path: Path):
    proc = bench(tmp_path, "-m", "profile=cpu,nosuch", *SMOKE, f"hydra.sweep.dir={tmp_path / 'sweep'}",
                 fresh_store=True)
    line = one_error_line(proc)
    assert line.startswith("error: sweep point profile=nosuch: In 'config': Could not find 'profile/nosuch'")
    assert not (tmp_path / "sweep").exists() and not (tmp_path / "mlflow.db").exists()  # no job ran
    proc = bench(tmp_path, "-m", "profile=cpu,m60-8q", "scenario.repeats=1,0", *SMOKE,
                 f"hydra.sweep.dir={tmp_path / 'sweep'}")
    assert one_error_line(proc).startswith("error: sweep point profile=cpu scenario.repeats=0: scenario.repeats: "
                                           "must be 1..50, got 0")


# --- case 1, the core part: concurrent runs never share pinned cores unseen -----------------------------------------
def test_case_1_core_locks_name_their_holder_and_are_held_by_one_run_at_a_time(tmp_path: Path):
    from suites.backends import corelock
    from suites.errors import PlacementError

    lease = corelock.CoreLease("outputs/runs/first", tmp_path).acquire([0, 1])
    held = corelock.held_by_others([0, 1, 2], tmp_path)  # another descriptor is another holder, even in-process
    assert held == {0: corelock.Holder(str(os.getpid()), "outputs/runs/first"),
                    1: corelock.Holder(str(os.getpid()), "outputs/runs/first")}
    with pytest.raises(PlacementError, match=rf"core 1 \(pid {os.getpid()} `.*`, run dir outputs/runs/first\)"):
        corelock.CoreLease("outputs/runs/second", tmp_path).acquire([1, 2])
    assert corelock.held_by_others([2], tmp_path) == {}  # the refused lease kept nothing
    lease.release()
    assert corelock.held_by_others([0, 1, 2], tmp_path) == {}


@pytest.mark.e2e
@pytest.mark.alone  # the other runs on this host must be its own
def test_case_1_a_second_run_takes_the_free_cores_or_is_refused_naming_the_first(tmp_path: Path):
    """Two runs at once used to pin both guests to core 0 and measure 2,795 vs 4,597 images/s unseen."""
    import json
    import signal

    from .test_bench_e2e import start_idle_pair

    first, first_dir, _ = start_idle_pair(tmp_path / "first", "scenario=single")
    try:
        wait_for(lambda: training(first_dir, "g0"))
        second = bench(tmp_path / "second", "workload=idle", *SMOKE, "workload.seconds=0", timeout=300)
        assert second.returncode == 0, second.stderr[-2000:]
        guest = json.loads((tmp_path / "second" / "run" / "results.json").read_text())["guests"][0]
        assert "another benchmark run holds core" in guest["placement"]["note"]  # said, and recorded
        assert f"pid {first.pid} `" in guest["placement"]["note"] and f"`, run dir {first_dir}" in \
            guest["placement"]["note"]
        n = len(os.sched_getaffinity(0))
        third = bench(tmp_path / "third", "workload=idle", *SMOKE, f"profile.vcpus={n}", "wait_for_cores_s=0")
        line = one_error_line(third)
        assert f"pid {first.pid} `" in line and f"run dir {first_dir}" in line and "run again when it ends" in line
        assert not (tmp_path / "third" / "run").exists()
    finally:
        first.send_signal(signal.SIGINT)
        first.communicate(timeout=120)
    mine = json.loads((first_dir / "results.json").read_text())["guests"][0]["placement"]["vcpus"]
    assert mine and not set(mine) & set(guest["result"]["affinity"])  # never the same core


# --- case 5: a second Ctrl-C while the run is being recorded ---------------------------------------------------------
@pytest.mark.e2e
def test_case_5_ctrl_c_while_recording_keeps_the_record(tmp_path: Path):
    """The first Ctrl-C stops the guests; two more, pressed once the table is out (the store is being written),
    are noted and the record completes."""
    import json
    import signal
    import time

    from .test_bench_e2e import start_idle_pair

    proc, run_dir, uri = start_idle_pair(tmp_path)
    wait_for(lambda: training(run_dir, "g0") and training(run_dir, "g1"))
    proc.send_signal(signal.SIGINT)
    assert proc.stdout is not None
    seen = []
    for line in proc.stdout:  # unbuffered: the summary line comes just before the store is written
        seen.append(line)
        if line.startswith("status: interrupted"):
            for _ in range(2):
                proc.send_signal(signal.SIGINT)
                time.sleep(0.05)  # signals pending at once are one signal
            break
    out, err = proc.communicate(timeout=120)
    out = "".join(seen) + out
    assert proc.returncode == 130, err[-2000:]
    assert "Traceback" not in err, err[-2000:]
    assert "interrupt noted: recording what was measured" in out
    assert json.loads((run_dir / "results.json").read_text())["status"] == "interrupted"
    parents, children = runs_of(uri)
    assert parents.iloc[0]["status"] == "KILLED" and len(children) == 2


def test_case_5_the_third_press_gives_up_what_the_shield_guards():
    """A store that hangs must not trap the user: presses 1 and 2 are noted, the third ends the shielded work
    (in process, so the presses' timing is certain; the bench CLI then says where results.json is)."""
    import signal
    import time

    from suites.run.shield import Shield

    said: list[str] = []
    with pytest.raises(KeyboardInterrupt):
        with Shield(said.append, "recording what was measured"):
            for _ in range(3):
                os.kill(os.getpid(), signal.SIGINT)
                time.sleep(0.05)  # the handler runs between presses
    assert said == ["interrupt noted: recording what was measured first (Ctrl-C 2 more time(s) to give that up)",
                    "interrupt noted: recording what was measured first (Ctrl-C 1 more time(s) to give that up)",
                    "interrupt: 3 times; giving up recording what was measured"]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # the handler is put back
    with Shield(said.append, "stopping the guests", give_up=None):  # work that must finish: never given up
        for _ in range(4):
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.05)
    assert said[-1] == "interrupt noted: stopping the guests first"


def test_a_signal_stays_named_where_a_library_raised_a_bare_keyboardinterrupt_for_it():
    """Ray's wait loops catch the Interrupted the runner's handler raises and raise a bare KeyboardInterrupt: the
    handler remembers which signal it was (in process; tests/test_ray_backend.py has the real ray.wait), and so does
    a shield's, for once it is down. The handlers are put back: the other tests here expect Python's own."""
    import signal
    import time

    from suites.run.shield import SIGNALS, Shield, interrupt_reason, stop_on_signals

    def library_wait(sig: int) -> None:
        try:
            os.kill(os.getpid(), sig)
            time.sleep(1)  # the handler runs here
        except KeyboardInterrupt:
            raise KeyboardInterrupt from None  # what Ray's check_status does with the status it made of it

    saved = {s: signal.getsignal(s) for s in SIGNALS}
    try:
        assert interrupt_reason(KeyboardInterrupt()) == "interrupted (Ctrl-C)"  # no handler of ours: Python's own
        stop_on_signals()
        with pytest.raises(KeyboardInterrupt) as caught:
            library_wait(signal.SIGTERM)
        assert type(caught.value) is KeyboardInterrupt and interrupt_reason(caught.value) == "interrupted (SIGTERM)"
        with Shield(lambda line: None, "stopping the guests", give_up=None):
            os.kill(os.getpid(), signal.SIGHUP)
            time.sleep(0.05)
        assert interrupt_reason() == "interrupted (SIGHUP: the terminal or ssh session hung up)"
        with pytest.raises(KeyboardInterrupt) as caught:
            library_wait(signal.SIGINT)
        assert interrupt_reason(caught.value) == "interrupted (Ctrl-C)"
    finally:
        for s, handler in saved.items():
            signal.signal(s, handler)


# --- case 14: a user's own config directory, through --config-dir or hydra.searchpath --------------------------------
def user_profiles(tmp: Path) -> Path:
    folder = tmp / "myconf" / "profile"
    folder.mkdir(parents=True)
    (folder / "mine.yaml").write_text("defaults:\n  - base_profile\nname: mine\nkind: cpu\ngpus: 0\nvcpus: 1\n"
                                      "memory_MiB: 4096\n")
    return folder.parent


@pytest.mark.e2e
def test_case_14_config_dir_and_searchpath_are_prechecked_like_hydra_reads_them(tmp_path: Path):
    import json

    conf = user_profiles(tmp_path)
    ok = bench(tmp_path, "workload=idle", *SMOKE, "profile=mine", f"hydra.searchpath=[file://{conf}]")
    assert ok.returncode == 0, ok.stderr[-2000:]  # used to be refused: the precheck dropped the searchpath
    assert json.loads((tmp_path / "run" / "results.json").read_text())["guests"][0]["spec"]["profile"] == "mine"
    bad = bench(tmp_path / "b", "--config-dir", str(conf), "workload=idle", *SMOKE, "profile=nosuch")
    assert one_error_line(bad).startswith("error: In 'config': Could not find 'profile/nosuch'")
    assert "mine" in bad.stderr  # the user's profile is among the choices
    sweep = bench(tmp_path / "s", "-m", "--config-dir", str(conf), "workload=idle", *SMOKE, "profile=mine,nosuch",
                  f"hydra.sweep.dir={tmp_path / 's' / 'sweep'}")
    assert one_error_line(sweep).startswith("error: sweep point profile=nosuch: ")
    assert not (tmp_path / "s" / "sweep").exists()
    missing = bench(tmp_path / "m", "--config-dir", str(tmp_path / "none"), *SMOKE)
    assert one_error_line(missing) == f"error: --config-dir {tmp_path / 'none'}: not a directory"


# --- case 15: experiment=NAME is the MLflow experiment -------------------------------------------------------------
@pytest.mark.e2e
def test_case_15_experiment_names_the_mlflow_experiment(tmp_path: Path):
    import mlflow

    proc = bench(tmp_path, "workload=idle", *SMOKE, "experiment=night-run")
    assert proc.returncode == 0, proc.stderr[-2000:]
    mlflow.set_tracking_uri(f"sqlite:///{tmp_path / 'mlflow.db'}")
    assert len(mlflow.search_runs(experiment_names=["night-run"])) == 2  # the scenario and its guest
    old = bench(tmp_path / "old", "+experiment=smoke")
    assert one_error_line(old) == ("error: +experiment=smoke: presets are +preset=NAME now (configs/preset/); "
                                   "experiment=NAME names the MLflow experiment")


# --- case 18: each mechanism that stops guests, seen on its own ------------------------------------------------------
@pytest.mark.e2e
def test_case_18_a_runner_fault_mid_run_is_recorded_and_its_guests_stopped(tmp_path: Path):
    """A guest that cannot start (its log path taken by a folder) while the other already runs: before, a
    traceback and no record; now both guests fail with the runner's reason, the running one is stopped by the
    runner (``finally``; the runner checks none is left), and the run is recorded."""
    import json


    args, run_dir, uri = bench_args(tmp_path, "scenario=concurrent", "workload=idle", *SMOKE, "workload.seconds=600")
    proc = subprocess.run(with_fault(args, dirs=(run_dir / "g1.log",)), cwd=REPO, capture_output=True, text=True,
                          timeout=300,
                          env={**os.environ, "BENCH_DATA_ROOT": str(tmp_path / "none")})
    assert proc.returncode == 1, proc.stderr[-2000:]
    results = json.loads((run_dir / "results.json").read_text())
    assert results["status"] == "failed"
    assert not [r for r in results["reasons"] if "still running" in r], results["reasons"]
    errors = [g["result"]["error"] for g in results["guests"]]
    assert all(e.startswith("stopped: the runner failed mid-run ([Errno 21] Is a directory") for e in errors), errors
    assert "IsADirectoryError" in (run_dir / "runner-fault.log").read_text()
    parents, children = runs_of(uri)
    assert parents.iloc[0]["status"] == "FAILED" and len(children) == 2


@pytest.mark.e2e
def test_case_18_a_killed_runner_takes_its_silent_guests_with_it(tmp_path: Path):
    """SIGKILL leaves the runner no say: only PR_SET_PDEATHSIG ends guests that never write to their pipe."""
    import signal

    import psutil

    from .test_bench_e2e import start_idle_pair

    proc, run_dir, _ = start_idle_pair(tmp_path)
    wait_for(lambda: training(run_dir, "g0") and training(run_dir, "g1"))
    pids = [training(run_dir, "g0"), training(run_dir, "g1")]
    proc.kill()
    proc.communicate(timeout=60)
    try:
        wait_for(lambda: not any(psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE
                                 for p in pids), timeout=15)
    finally:
        for p in pids:  # whatever happens, leave nothing behind
            try:
                os.killpg(p, signal.SIGKILL)
            except ProcessLookupError:
                pass


@pytest.mark.e2e
def test_case_18_a_guest_past_the_time_limit_is_killed_with_that_reason(tmp_path: Path):
    """The time limit, seen on a silent guest (nothing else would end it for 600 s)."""
    import json

    proc = bench(tmp_path, "workload=idle", *SMOKE, "workload.seconds=600", "scenario.timeout_s=2", timeout=120)
    assert proc.returncode == 1, proc.stderr[-2000:]
    result = json.loads((tmp_path / "run" / "results.json").read_text())["guests"][0]["result"]
    assert result["status"] == "failed" and result["error"] == "timed out after scenario.timeout_s=2 s"


def test_case_1_a_run_too_big_for_this_host_alone_is_refused_for_that_not_queued(monkeypatch: pytest.MonkeyPatch):
    """Another run holding a core must not turn "too much memory for this host" into "wait for its cores"."""
    from suites.backends import corelock, local
    from suites.errors import PlacementError

    monkeypatch.setattr(corelock, "held_by_others", lambda cores: {cores[0]: corelock.Holder("4242", "other")})
    host = sorted(os.sched_getaffinity(0))

    def too_big(free: list[int]) -> list:
        if len(free) < len(host):
            raise PlacementError(f"needs {len(host)} cores")
        raise PlacementError("2 guest(s) x 30000 MiB = 60000 MiB > 24106 MiB host memory")

    with pytest.raises(PlacementError) as exc:
        local.on_free_cores(too_big)
    assert not isinstance(exc.value, corelock.CoresHeld) and "host memory" in str(exc.value)

    def needs_every_core(free: list[int]) -> list:
        if len(free) < len(host):
            raise PlacementError(f"needs {len(host)} cores")
        return []

    with pytest.raises(corelock.CoresHeld, match="pid 4242, run dir other"):  # fits alone: worth waiting for
        local.on_free_cores(needs_every_core)


def placed_beside_core_0(lock_dir: Path) -> Callable[[], str]:
    """A placement that needs core 0 and is refused (CoresHeld, naming the holder) while another run holds it."""
    from suites.backends import corelock

    def make() -> str:
        held = corelock.held_by_others([0], lock_dir)
        if held:
            raise corelock.CoresHeld(f"another benchmark run on this host holds {corelock.describe(held)}",
                                     corelock.describe(held))
        return "placed"

    return make


@pytest.mark.e2e  # trains, renders or waits for real (seconds)
def test_case_1_a_run_that_does_not_fit_beside_another_waits_for_its_cores(tmp_path: Path):
    """wait_for_cores_s: the run queues for cores another run holds (saying so once), or is refused at its end."""
    from suites.backends import corelock
    from suites.run.plan import plan_and_lease

    lease = corelock.CoreLease("outputs/runs/first", tmp_path).acquire([0])
    make = placed_beside_core_0(tmp_path)

    said: list[str] = []
    with pytest.raises(corelock.CoresHeld):
        plan_and_lease(make, lambda made: [], tmp_path / "run", wait_s=0.0, on_wait=said.append)
    assert said == []  # wait_for_cores_s=0: refused at once

    def waits(line: str) -> None:  # the first run frees its cores once this one says it waits (no guessed delay)
        said.append(line)
        lease.release()

    made, mine = plan_and_lease(make, lambda made: [], tmp_path / "run", wait_s=30.0, on_wait=waits)
    assert made == "placed" and len(said) == 1
    assert said[0].startswith("waiting for cores: 0 s of 30 s (wait_for_cores_s); held by")
    assert "outputs/runs/first" in said[0] and f"pid {os.getpid()} `" in said[0]  # the holder: pid, command, run
    mine.release()


@pytest.mark.e2e  # trains, renders or waits for real (seconds)
def test_case_7_a_run_waiting_for_cores_says_so_at_least_every_10_s(tmp_path: Path, monkeypatch):
    """A long wait is not silence: a line when it starts and one at least every WAIT_REPORT_S after."""
    from suites.backends import corelock
    from suites.run import plan as plan_mod

    monkeypatch.setattr(plan_mod, "WAIT_REPORT_S", 0.5)
    lease = corelock.CoreLease("outputs/runs/first", tmp_path).acquire([0])
    said: list[str] = []
    with pytest.raises(corelock.CoresHeld):
        plan_mod.plan_and_lease(placed_beside_core_0(tmp_path), lambda made: [], tmp_path / "run", wait_s=2.2,
                                on_wait=said.append)
    lease.release()
    assert 3 <= len(said) <= 6
    assert all("s of 2.2 s (wait_for_cores_s); held by" in line and "outputs/runs/first" in line for line in said)
