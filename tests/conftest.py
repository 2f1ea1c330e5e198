"""Fixtures and hooks for every test (the helpers test modules import are in tests/support/)."""

from __future__ import annotations

import collections
import fcntl
import os
import signal
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from suites.backends.leftovers import STATE_ENV

# pytest rewrites each test module's asserts and caches the result beside its bytecode, unless the interpreter was told
# never to write bytecode (PYTHONDONTWRITEBYTECODE: CI here): then every test process parsed and rewrote every test
# module again, 5 s of each one's collection. make test compiles the sources for the same reason; this is pytest's part.
sys.dont_write_bytecode = False

# The fixtures tests in several folders share, defined with their helpers in tests/support/.
pytest_plugins = ["tests.support.mirror", "tests.support.mps_standin", "tests.support.outcomes"]

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
def own_signal_handlers() -> Iterator[None]:
    """Each test leaves this process's SIGINT, SIGTERM and SIGHUP handlers as it found them: a command run in
    process (study, size, rehearse, compare through suites.commands) installs the suite's own (stop_on_signals), which
    keeps what a shield noted; left installed, the next test in this worker would find it, and a signal owed to it."""
    from suites.run.shield import SIGNALS

    saved = {s: signal.getsignal(s) for s in SIGNALS}
    yield
    for s, handler in saved.items():
        signal.signal(s, handler)


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
# suite process never holds both: a guest renders or trains. triton alone is what must come first (0.5 s; torch._dynamo
# with it took 5 s of every test process's start).
try:
    import triton  # noqa: F401
except ImportError:
    pass


# --- tiers: the folder says it. tests/unit: the unit tier, nothing that starts a CLI, guest process, server, cluster or
# VM (`make test-fast`); tests/e2e: what starts one (given the e2e marker here, so `-m "not e2e"` selects the unit
# tier too). The cluster, vm, alone and slow markers stay in the files: a folder cannot say them. A new test that
# starts a process goes in tests/e2e. tests/test_layout.py holds each product module to a test module of its own.
E2E = Path(__file__).parent / "e2e"


def pytest_itemcollected(item: pytest.Item) -> None:
    """Each test under tests/e2e is marked e2e as it is collected (before ``-m`` selects)."""
    if E2E in Path(item.path).parents:
        item.add_marker(pytest.mark.e2e)


@pytest.hookimpl(trylast=True)  # after pytest-randomly has shuffled them
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    slow_first(items)


def slow_first(items: list[pytest.Item]) -> None:
    """The modules holding a ``slow`` test (a minute or more each) go first, the most minutes first;
    then the others, those with the most tests first, each module's tests in pytest-randomly's order. xdist hands
    the modules out in this order (``--no-loadscope-reorder`` in pyproject.toml): its own order, by number of tests
    alone, started the rehearsal's module (two tests, 5 minutes) last, while the other test processes had nothing
    left to run (a fresh-clone CI's last 4 minutes, 2026-11-29): the longest first is what ends soonest."""
    slow: collections.Counter[str] = collections.Counter()
    for item in items:  # each slow test's minutes (slow(minutes=N): what a fresh-clone CI took; one where unsaid)
        mark = item.get_closest_marker("slow")
        if mark is not None:
            slow[item.module.__name__] += mark.kwargs.get("minutes", 1)
    count = collections.Counter(item.module.__name__ for item in items)
    items.sort(key=lambda item: (-slow[item.module.__name__], -count[item.module.__name__]))  # stable within one
