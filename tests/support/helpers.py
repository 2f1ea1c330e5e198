"""Helpers the test modules share (conftest.py holds only fixtures and hooks): the repository's paths, the real
CLI run in a subprocess against a private store, a real MLflow server, composing a config, waiting and process
checks."""

from __future__ import annotations

import contextlib
import copy
import functools
import json
import os
import re
import signal
import socket
import subprocess
import sys
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import psutil
import pytest
from hydra import compose, initialize_config_dir

from suites.config.schema import BenchConfig, load, register_configs
from suites.poll import wait_until
from suites.record import store_seed

from . import progress

REPO = Path(__file__).resolve().parents[2]
TRACES = REPO / "tests" / "traces"  # recorded NVML answers (gpu_probe/trace.py), one file per scenario
# Real MNIST for accuracy tests: BENCH_TEST_MNIST_ROOT, else the team's shared copy beside the checkout.
MNIST_ROOT = Path(os.environ.get("BENCH_TEST_MNIST_ROOT", REPO.parent / "shared" / "data"))
HAVE_MNIST = (MNIST_ROOT / "MNIST" / "raw" / "train-images-idx3-ubyte").exists()


# A seconds-long guest: small CNN, a slice of synthetic data.
SMOKE = ["+preset=smoke", "progress=quiet"]
# A mixed run's (or a sizing's consolidation's) ML guest as the GPU-speed stand-in: 1 ms steps that sleep, for as long
# as the CAD replay lasts. For the tests whose check is the sweep, the race, the record or the bundle, not the training:
# real training in a mixed run is tests/e2e/test_mixed.py's three phases', in a sizing the docs' plain make size
# line's (tests/e2e/test_docs.py; four phases of real training are ~25 s of CI's CPU).
STAND_IN_ML = ["scenario.mixed.ml.workload=fixed-step", "scenario.mixed.ml.overrides=['workload.step_ms=1',"
               "'workload.min_window_s=0.5','workload.until_stopped=true','workload.warmup_steps=3']"]


@dataclass
class BenchRun:
    proc: subprocess.CompletedProcess[str]
    run_dir: Path
    tracking_uri: str

    @property
    def results(self) -> dict:
        return json.loads((self.run_dir / "results.json").read_text())


def store_at(db: Path) -> str:
    """``db``'s tracking URI, the file seeded as the product seeds a new store (suites/record/store_seed.py: a copy
    of MLflow's empty store, not its ~70 migrations again) where it does not exist yet. A test that asserts no store
    was made asks for none (``bench_args(fresh_store=True)``) and so sees the product make it or not."""
    store_seed.seed(db)
    return f"sqlite:///{db}"


def bench_args(tmp: Path, *overrides: str, fresh_store: bool = False) -> tuple[list[str], Path, str]:
    """The bench command line into tmp's own store, run and cache dirs; a key ``overrides`` sets replaces the one
    given here (then the returned run dir is only the default's). The store starts from the template unless
    ``fresh_store`` (a test that asserts none was made)."""
    run_dir = tmp / "run"
    given = {o.split("=", 1)[0] for o in overrides}
    db = tmp / "mlflow.db"
    uri = f"sqlite:///{db}" if fresh_store or "tracking_uri" in given else store_at(db)
    own = [f"tracking_uri={uri}", f"artifact_dir={tmp / 'artifacts'}", f"data.cache_dir={tmp / 'data'}",
           f"hydra.run.dir={run_dir}"]
    args = [sys.executable, "-m", "suites.commands.bench", *overrides,
            *(a for a in own if a.split("=", 1)[0] not in given)]
    return args, run_dir, uri


# The bench CLI with a fault planted once it holds its run directory (which must be new or empty before): each
# path in argv[1] (JSON {"dirs": [...], "files": [...]}) made where a run would write, as a full disk or a
# clobbered path would leave it. The fault meets the run mid-way, as it would on a real host.
FAULT_AFTER_CLAIM = """import json, sys
from pathlib import Path
from suites.commands import bench
from suites.pipeline import command_line
planted, claim = json.loads(sys.argv[1]), command_line.claim_run_dir
def claim_then_plant(*args, **kwargs):
    held = claim(*args, **kwargs)
    for d in planted.get("dirs", []):
        Path(d).mkdir(parents=True)
    for f in planted.get("files", []):
        Path(f).write_text("not a directory")
    return held
command_line.claim_run_dir = claim_then_plant
sys.exit(bench.main(sys.argv[2:]))
"""


def with_fault(args: list[str], dirs: tuple[Path, ...] = (), files: tuple[Path, ...] = ()) -> list[str]:
    """``args`` (from :func:`bench_args`) running the CLI with FAULT_AFTER_CLAIM's planted paths."""
    assert args[1:3] == ["-m", "suites.commands.bench"], args[:3]
    planted = json.dumps({"dirs": [str(d) for d in dirs], "files": [str(f) for f in files]})
    return [args[0], "-c", FAULT_AFTER_CLAIM, planted, *args[3:]]


def run_bench(tmp: Path, *overrides: str, fresh_store: bool = False) -> BenchRun:
    """The bench CLI into ``tmp``'s own store and folders, guarded by its progress (tests/support/progress.py)."""
    args, run_dir, uri = bench_args(tmp, *overrides, fresh_store=fresh_store)
    proc = progress.run(args, watch=(tmp,), cwd=REPO, env={**os.environ, "BENCH_DATA_ROOT": str(tmp / "no-real-data")})
    return BenchRun(proc, run_dir, uri)



# --- a real MLflow tracking server on a free loopback port --------------------------------------
def free_port() -> int:
    return free_ports(1)[0]


def free_ports(count: int) -> list[int]:
    """``count`` distinct free ports: each socket stays bound until all are picked (two calls of a one-port pick can
    get the same port back, as a CI run's Ray head did for its GCS and client server)."""
    with contextlib.ExitStack() as held:
        socks = [held.enter_context(socket.socket()) for _ in range(count)]
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]


def start_server(tmp: Path, port: int) -> subprocess.Popen:
    """A real tracking server, without MLflow 3's job execution (GenAI jobs; nothing here submits one): with it, a
    start took 10 processes and 43 s of CPU in its first 25 s on CI's two cores, without it 2 and 9 s."""
    proc = subprocess.Popen([sys.executable, "-m", "mlflow", "server", "--host", "127.0.0.1", "--port", str(port),
                             "--backend-store-uri", store_at(tmp / "server.db"),
                             "--artifacts-destination", str(tmp / "server-artifacts"), "--workers", "1"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
                            env={**os.environ, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"})
    if wait_until(lambda: healthy(port), 120, 0.5):
        return proc
    stop(proc)
    pytest.fail("mlflow server did not start within 120 s")


def healthy(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as r:
            return r.status == 200
    except OSError:
        return False


def stop(proc: subprocess.Popen) -> None:
    """The server and its whole group (uvicorn, MLflow's job runner and its huey consumers); again is a no-op, so a
    test's ``finally`` can stop a server its body may already have stopped."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait(timeout=30)


def stop_group(proc: subprocess.Popen, term_wait: float = 10) -> None:
    """SIGTERM, then SIGKILL, to a daemon's whole process group (it was started with start_new_session), and
    whatever of the group outlived its leader."""
    for sig, wait in ((signal.SIGTERM, term_wait), (signal.SIGKILL, 30)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            break
        try:
            proc.wait(timeout=wait)
            break
        except subprocess.TimeoutExpired:
            continue
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


@contextlib.contextmanager
def cpu_burner(procs: int | None = None, niceness: int = 0) -> Iterator[None]:
    """Other work keeping the host busy (a person running `make size` beside the tests): a spinning shell per core
    (``procs``), all in a process group of their own, stopped after. ``niceness=19``: a burner that takes only the CPU
    nobody else wants, for a test that needs the host seen busy, not its own processes slowed (alone, it fills the
    idle cores; under CI, where the other test processes already keep the host busy, it takes ~1 % of a core instead
    of a third of the host from the other tests). Under the kernel's autogroup scheduling (this host kind's) a session
    is a scheduling group of its own, shared fairly with the others whatever its processes' niceness (a burner niced
    only so took 61 % of a core under CI): its session's group is niced too."""
    count = procs or os.cpu_count() or 2
    spin = f"for i in $(seq {count}); do (while :; do :; done) & done; wait"
    proc = subprocess.Popen(["sh", "-c", f"echo {niceness} > /proc/self/autogroup 2>/dev/null; "
                                         f"exec nice -n {niceness} sh -c '{spin}'"], start_new_session=True)
    try:
        yield
    finally:
        stop_group(proc, term_wait=5)


# --- composing, waiting, process checks --------------------------------------------------------------------------
# What configs/ reads from the environment (``${oc.env:...}``): part of what a composition is, so part of its key (a
# composition cached before a test set BENCH_DATA_ROOT was handed to it, which saw the default root: a test that
# failed only after another had composed the same overrides).
CONFIG_ENV = ("BENCH_DATA_ROOT", "BENCH_WAIT_FOR_CORES_S", "BENCH_HOST_BUSY_PCT")


@functools.cache
def _composed(overrides: tuple[str, ...], env: tuple[str | None, ...]) -> BenchConfig:
    register_configs()
    with initialize_config_dir(config_dir=str(REPO / "configs"), version_base="1.3"):
        return load(compose("config", overrides=list(overrides)))


def compose_config(*overrides: str) -> BenchConfig:
    """The config ``overrides`` compose to, as the CLI composes it (each distinct one composed once per test
    process: 0.2 s each, and the catalogue tests compose the same profiles again; a copy, so a test may change it)."""
    return copy.deepcopy(_composed(overrides, tuple(os.environ.get(k) for k in CONFIG_ENV)))


def wait_for(predicate: Callable[[], object], timeout: float = 120.0) -> None:
    assert wait_until(predicate, timeout, 0.05), f"timed out waiting ({timeout:.0f} s)"


def wait_while_running(proc: subprocess.Popen, predicate: Callable[[], object], timeout: float, what: str) -> None:
    """Wait for ``predicate`` while ``proc`` runs; ``what`` is the failure if it exits first or time runs out."""
    wait_until(lambda: predicate() or proc.poll() is not None, timeout, 0.2)
    assert proc.poll() is None and predicate(), what


def training(run_dir: Path, gid: str) -> int | None:
    """The guest's pid (in its VM for a VM guest) once its log says training started."""
    log = run_dir / f"{gid}.log"
    if not log.exists():
        return None
    for line in log.read_text(errors="replace").splitlines():
        if "training started" in line:
            return int(line.split("pid ")[1].split("]")[0])
    return None


def assert_gone(pids: list[int]) -> None:
    for pid in pids:
        try:
            alive = psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
            what = psutil.Process(pid).cmdline()[:2] if alive else []
        except psutil.NoSuchProcess:
            alive, what = False, []
        assert not alive, f"left running: {pid} {what}"


def one_error_line(proc: subprocess.CompletedProcess[str]) -> str:
    """The one ``error:`` line (exit 2, nothing else on stderr, no traceback) a refused command printed."""
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert proc.returncode == 2 and len(lines) == 1 and lines[0].startswith("error: "), proc.stderr[-3000:]
    assert "Traceback" not in proc.stdout + proc.stderr
    return lines[0]


def mlflow_client(uri: str):
    """An MLflow client on ``uri`` (MLflow is imported here, not where a test module is collected: the unit tier
    collects every module and imports none of MLflow)."""
    from mlflow.tracking import MlflowClient

    return MlflowClient(uri)


def all_runs(uri: str):
    """Every run of the suite's experiment in the store at ``uri``, as MLflow's DataFrame."""
    import mlflow

    mlflow.set_tracking_uri(uri)
    return mlflow.search_runs(experiment_names=["gpu-mixed-bench"])


def runs_of(uri: str):
    """The store's scenario runs and guest runs (two DataFrames)."""
    import mlflow

    mlflow.set_tracking_uri(uri)
    df = mlflow.search_runs(experiment_names=["gpu-mixed-bench"])
    return df[df["tags.bench.role"] == "scenario"], df[df["tags.bench.role"] == "guest"]


def over_width(output: str, width: int = 120) -> list[str]:
    """The printed lines wider than ``width`` columns, but for a word or `command` longer than a line, which stands
    alone on its own line (suites/render/tables.py fold_line)."""
    return [line for line in output.splitlines() if len(line.rstrip()) > width
            and re.sub(r"`[^`]*`", "", line.strip()).count(" ")]


def broken_tokens(table: object, lines: list[str]) -> list[str]:
    """A rich table's cell words that no rendered line holds whole: a word folded over two lines ('passthrough-4g' /
    'pu') or cut by an ellipsis."""
    from rich.text import Text

    rendered = "\n".join(lines)
    words = {w for col in table.columns for cell in col._cells  # type: ignore[attr-defined]
             for w in (cell.plain if isinstance(cell, Text) else Text.from_markup(str(cell)).plain).split()}
    return sorted(w for w in words if w not in rendered)
