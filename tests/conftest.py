"""Shared helpers: run the real CLI in a subprocess against a private store."""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import pytest

from suites.backends.leftovers import STATE_ENV

REPO = Path(__file__).resolve().parent.parent
# Real MNIST for accuracy tests: BENCH_TEST_MNIST_ROOT, else the team's shared copy beside the checkout.
MNIST_ROOT = Path(os.environ.get("BENCH_TEST_MNIST_ROOT", REPO.parent / "shared" / "data"))
HAVE_MNIST = (MNIST_ROOT / "MNIST" / "raw" / "train-images-idx3-ubyte").exists()

# A CI runner that starts the suite as a background job without job control hands it SIGINT ignored, and an ignored
# signal stays ignored across exec: the runners the Ctrl-C tests start would never see theirs (seen here: a bench
# left running with its guests, holding its cores, and every later test refused). A handler does not survive exec,
# so with one here every process the tests start begins with SIGINT at its default.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

# Every bench run locks the cores it pins (suites/backends/corelock.py), in its test's own state (own_state below):
# only runs of one test meet there. One that finds its cores held by another run of its test waits for them (the
# product's wait_for_cores_s, defaulted here for every process the tests start) instead of being refused.
os.environ.setdefault("BENCH_WAIT_FOR_CORES_S", "900")
# The tests run beside each other on purpose (xdist workers on two cores): to every run, the other tests are a busy
# host. Its check is the product's host_busy_pct, defaulted here so high that it is off (the runs skip their look
# before starting); the tests about a busy host name host_busy_pct on their command line, which wins.
os.environ.setdefault("BENCH_HOST_BUSY_PCT", "100000")
# Every test's runs pin their guests as if they had the host to themselves, so on CI's two cores three test processes'
# guests share cores; torch's OpenMP threads then spin-wait on cores another process needs. Measured with two busy
# processes beside a real-MNIST run: 116 s of CPU and 607 images/s spinning, 53 s and 1,487 images/s with PASSIVE
# (alone: 2,676 vs 2,587 images/s). The tests assert behaviour, not speed; a user's runs keep OpenMP's default.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
# A test that must have the host to itself (it asserts on core locks, placement beside another run, or timings
# that another test's load would skew) is marked ``alone``: it holds this lock exclusively, every other test holds
# it shared, so it runs while no other test does. The gate in front of it is what makes that come: a shared holder
# passes through it, an ``alone`` test holds it while it waits and runs. Without it, flock lets the other test
# processes take turns holding the lock shared, and an alone test waited for a moment when none did (344 s seen with
# three test processes).
HOST_LOCK = Path("/tmp") / "gpu-mixed-bench-tests.lock"
HOST_GATE = Path("/tmp") / "gpu-mixed-bench-tests.gate"


@pytest.fixture(autouse=True)
def own_state(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Each test's own host state (core locks, mdev and MPS ledgers: BENCH_STATE_DIR, suites/backends/leftovers.py),
    inherited by every process it starts: runs of two tests never meet there, so neither waits for, refuses beside
    or cleans up after the other. A test about runs meeting (core locks, leftovers across runs) starts both in its
    own state, and says so."""
    state = tmp_path_factory.mktemp("state")
    monkeypatch.setenv(STATE_ENV, str(state))
    return state


@pytest.fixture(autouse=True)
def host_share(request: pytest.FixtureRequest):
    alone = request.node.get_closest_marker("alone") is not None
    gate = os.open(HOST_GATE, os.O_RDWR | os.O_CREAT, 0o666)
    fd = os.open(HOST_LOCK, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        fcntl.flock(gate, fcntl.LOCK_EX)  # waits while an alone test waits or runs
        fcntl.flock(fd, fcntl.LOCK_EX if alone else fcntl.LOCK_SH)
        if not alone:
            fcntl.flock(gate, fcntl.LOCK_UN)
        yield
    finally:
        os.close(fd)  # drops the lock
        os.close(gate)


# Some tests render through Mesa's EGL (llvmpipe, its own LLVM) in the test process and others train with torch in
# it, whose optimizers import triton (another LLVM): triton loaded after Mesa crashes the process (a segfault in
# triton's import; seen once the two test processes ran the modules in another order). Loaded first, both work. A
# suite process never holds both: a guest renders or trains.
try:
    import torch._dynamo  # noqa: F401
    import triton  # noqa: F401
except ImportError:
    pass


# A seconds-long guest: small CNN, a slice of synthetic data.
SMOKE = ["+preset=smoke", "progress=quiet"]


@dataclass
class BenchRun:
    proc: subprocess.CompletedProcess[str]
    run_dir: Path
    tracking_uri: str

    @property
    def results(self) -> dict:
        return json.loads((self.run_dir / "results.json").read_text())


# An empty MLflow store as MLflow makes it, made once per test process at its first use: a new sqlite store runs
# MLflow's ~70 schema migrations (1.4 s of CPU in each run that opens one; the suite starts ~250). A test's own store
# starts as a copy; a test that asserts no store was made asks for none (fresh_store=True) and so sees the product
# make it or not.
STORE_TEMPLATE: dict[str, object] = {}


@pytest.fixture(scope="session", autouse=True)
def store_template(tmp_path_factory: pytest.TempPathFactory) -> None:
    STORE_TEMPLATE["factory"] = tmp_path_factory


def store_at(db: Path) -> str:
    """``db``'s tracking URI, the file a copy of the empty template store when it does not exist yet."""
    if "db" not in STORE_TEMPLATE and "factory" in STORE_TEMPLATE:
        from mlflow.tracking import MlflowClient

        template = STORE_TEMPLATE["factory"].mktemp("store-template") / "mlflow.db"
        MlflowClient(f"sqlite:///{template}").search_experiments()  # creates the tables, as a first run would
        STORE_TEMPLATE["db"] = template
    if not db.exists() and "db" in STORE_TEMPLATE:
        db.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(STORE_TEMPLATE["db"], db)
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
    args = [sys.executable, "-m", "suites.app.bench", *overrides, *(a for a in own if a.split("=", 1)[0] not in given)]
    return args, run_dir, uri


# The bench CLI with a fault planted once it holds its run directory (which must be new or empty before): each
# path in argv[1] (JSON {"dirs": [...], "files": [...]}) made where a run would write, as a full disk or a
# clobbered path would leave it. The fault meets the run mid-way, as it would on a real host.
FAULT_AFTER_CLAIM = """import json, sys
from pathlib import Path
from suites.app import bench
planted, claim = json.loads(sys.argv[1]), bench.claim_run_dir
def claim_then_plant(*args, **kwargs):
    held = claim(*args, **kwargs)
    for d in planted.get("dirs", []):
        Path(d).mkdir(parents=True)
    for f in planted.get("files", []):
        Path(f).write_text("not a directory")
    return held
bench.claim_run_dir = claim_then_plant
sys.argv = ["bench", *sys.argv[2:]]
bench.cli()
"""


def with_fault(args: list[str], dirs: tuple[Path, ...] = (), files: tuple[Path, ...] = ()) -> list[str]:
    """``args`` (from :func:`bench_args`) running the CLI with FAULT_AFTER_CLAIM's planted paths."""
    assert args[1:3] == ["-m", "suites.app.bench"], args[:3]
    planted = json.dumps({"dirs": [str(d) for d in dirs], "files": [str(f) for f in files]})
    return [args[0], "-c", FAULT_AFTER_CLAIM, planted, *args[3:]]


def run_bench(tmp: Path, *overrides: str, timeout: float = 600, fresh_store: bool = False) -> BenchRun:
    args, run_dir, uri = bench_args(tmp, *overrides, fresh_store=fresh_store)
    proc = subprocess.run(args, cwd=REPO, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "BENCH_DATA_ROOT": str(tmp / "no-real-data")})
    return BenchRun(proc, run_dir, uri)


@pytest.fixture
def tmp(tmp_path: Path) -> Path:
    return tmp_path


# --- a real MLflow tracking server on a free loopback port --------------------------------------
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(tmp: Path, port: int) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-m", "mlflow", "server", "--host", "127.0.0.1", "--port", str(port),
                             "--backend-store-uri", store_at(tmp / "server.db"),
                             "--artifacts-destination", str(tmp / "server-artifacts"), "--workers", "1"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as r:
                if r.status == 200:
                    return proc
        except OSError:
            time.sleep(0.5)
    stop(proc)
    pytest.fail("mlflow server did not start within 120 s")


def stop(proc: subprocess.Popen) -> None:
    os.killpg(proc.pid, signal.SIGKILL)  # the server and its gunicorn/uvicorn workers
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


# --- tiers: `make test-fast` runs the unit tier (no CLI, guest process, server, cluster or VM); CI runs everything ---
# Each test says its tier with a marker (``pytestmark`` for a whole module, else on the test): ``e2e`` when it starts
# the CLI, a guest or any other process (the pipeline run in-process starts guests too), ``cluster`` for a Ray or
# Slurm cluster, ``vm`` for a QEMU guest. Markers written in the test are there when pytest reads ``-m``; the tiers
# used to be guessed from the source text here, after ``-m`` had been applied, so `make test-fast` ran everything.
# A new test that starts a process and is not marked lands in the fast tier: mark it.


@pytest.hookimpl(trylast=True)  # after pytest-randomly has shuffled them
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    slow_first(items)


def slow_first(items: list[pytest.Item]) -> None:
    """The modules holding a ``slow`` test (minutes each) go first, each module's tests and the other modules in
    pytest-randomly's order: the test processes take modules in this order, and a slow one taken last ran alone
    for two minutes at the end while the others had nothing left to do."""
    slow = {item.module.__name__ for item in items if item.get_closest_marker("slow") is not None}
    items.sort(key=lambda item: item.module.__name__ not in slow)  # stable: every other order stays
