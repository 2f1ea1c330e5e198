"""Tests of ``suites/backends/forkserver.py`` with a real zygote (``python -m suites.guest.zygote``) and real guests
of the ``fixed-step`` workload at a GPU's step: a guest forked from it speaks the protocol as a spawned one does,
is a process group of its own that a kill ends, has its exit said by the zygote; a request the zygote cannot
serve leaves the guest to be started on its own."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from suites.backends.forkserver import ForkServer
from suites.backends.handle import GuestHandle, GuestPipe
from suites.guest.protocol import GuestSpec
from suites.poll import wait_until

pytestmark = pytest.mark.heavy  # a zygote and its guests are processes


def spec(guest_id: str = "g0", **workload: object) -> GuestSpec:
    config = {"step_ms": 1.0, "min_window_s": 0.25, "warmup_steps": 2, "size_by": "time", **workload}
    return GuestSpec(guest_id, "cpu", "fixed-step", config, {}, [0], [], None, 1024)


@pytest.fixture
def forks():
    server = ForkServer()
    yield server
    server.close()


def run_to_the_end(g: GuestHandle, timeout_s: float = 60.0) -> None:
    assert wait_until(lambda: (g.pump(), g.state != "starting")[1], timeout_s)
    g.release()
    assert wait_until(lambda: (g.pump(), g.finished)[1], timeout_s)


def test_a_forked_guest_runs_as_a_spawned_one_and_its_exit_is_said(tmp_path: Path, forks: ForkServer):
    g = GuestHandle(spec(), tmp_path / "g0.log", GuestPipe(tmp_path / "g0.log", forks))
    g.start()
    assert forks.proc is not None and not forks.failed
    pid = g.pid
    assert pid is not None and os.getpgid(pid) == pid  # a group of its own: what kill() ends
    run_to_the_end(g)
    assert g.result is not None and g.result.ok and g.result.metrics["timed_s"] >= 0.25
    assert g.result.info["setup"]["start_s"] < 0.5  # forked after the imports: no interpreter start of its own
    assert wait_until(lambda: g.pipe.returncode() is not None, 30)
    assert g.pipe.returncode() == 0
    assert "ready after" in (tmp_path / "g0.log").read_text()  # its stderr is its log


def test_a_kill_ends_a_forked_guest_and_its_exit_is_a_sigkills(tmp_path: Path, forks: ForkServer):
    first = GuestHandle(spec(), tmp_path / "g0.log", GuestPipe(tmp_path / "g0.log", forks))
    first.start()
    assert wait_until(lambda: (first.pump(), first.state != "starting")[1], 60)
    first.pipe.kill()  # waiting at the barrier, as an interrupted run's guests are
    assert first.pipe.returncode() == -9
    again = GuestHandle(spec("g1"), tmp_path / "g1.log", GuestPipe(tmp_path / "g1.log", forks))
    again.start()  # the same zygote serves the next repeat
    run_to_the_end(again)
    assert again.result is not None and again.result.ok and again.pid != first.pid


def test_a_request_the_zygote_cannot_serve_starts_the_guest_on_its_own(tmp_path: Path, forks: ForkServer):
    assert forks.spawn(dict(os.environ), ["no_such_module_anywhere"], tmp_path / "x.log") is None
    assert "ModuleNotFoundError" in forks.failed
    g = GuestHandle(spec(), tmp_path / "g0.log", GuestPipe(tmp_path / "g0.log", forks))
    g.start()
    assert not hasattr(g.pipe.proc, "_server")  # a subprocess.Popen of its own
    run_to_the_end(g)
    assert g.result is not None and g.result.ok


def test_closing_it_ends_the_zygote(tmp_path: Path):
    server = ForkServer()
    g = GuestHandle(spec(), tmp_path / "g0.log", GuestPipe(tmp_path / "g0.log", server))
    g.start()
    run_to_the_end(g)
    assert wait_until(lambda: g.pipe.returncode() is not None, 30)
    time.sleep(0.2)  # its listener idle in recv, as after a comparison's last repeat: a close must still reach it
    zygote = server.proc
    server.close()
    assert zygote is not None and zygote.returncode == 0  # it ended on its own at the socket's end, not killed
    t0 = time.monotonic()
    server.close()  # idempotent
    assert time.monotonic() - t0 < 1


def test_the_zygotes_cpu_is_the_runs_own_from_its_start_never_another_processs(tmp_path: Path, forks: ForkServer):
    """A comparison's first run said 'host busy (other processes: 28 % of a core)' on a quiet host: the zygote's
    import of its preloads (a core for seconds) was no guest's and not the runner's, so the sampler read it as
    another process's load. The run's sampler is told its pid as it starts, and its own alone (its guests are
    watched as guests: counted twice, a real other load would hide)."""
    from gpu_probe.sampler import Sampler

    told: list[int] = []
    forks.watched_by(told.append)
    assert told == []  # not started yet: told as it starts
    g = GuestHandle(spec(), tmp_path / "g0.log", GuestPipe(tmp_path / "g0.log", forks))
    g.start()
    assert forks.proc is not None and told == [forks.proc.pid]
    later: list[int] = []
    forks.watched_by(later.append)  # the next run's sampler: told at once
    assert later == [forks.proc.pid]
    forks.watched_by(None)
    sampler = Sampler(10.0)
    sampler.watch_helper(forks.proc.pid, descendants=False)
    run_to_the_end(g)
    (tree,) = sampler._helpers
    tree.refresh({forks.proc.pid: [g.pid]})  # the guest is the zygote's child
    assert set(tree.members) == {forks.proc.pid}


def test_a_prewarm_imports_the_preloads_before_any_guest_and_forks_nothing(tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch):
    """What a comparison's command asks while it opens its store: the zygote imports the preloads then (a module
    that marks its import here), answers nothing, forks nothing; the first guest is then forked from it at once."""
    (tmp_path / "marks_its_import.py").write_text(
        f"import os, pathlib\npathlib.Path({str(tmp_path / 'imported')!r}).write_text(str(os.getpid()))\n")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))  # the zygote's own path: the repository, then this
    server = ForkServer()
    try:
        server.prewarm(["marks_its_import"])
        assert server.proc is not None and not server.failed
        assert wait_until(lambda: (tmp_path / "imported").exists(), 60)
        assert (tmp_path / "imported").read_text() == str(server.proc.pid)  # in the zygote, before any request
        time.sleep(0.2)
        assert server._answers == [] and server._exits == {}  # nothing answered, nothing forked
        g = GuestHandle(spec(), tmp_path / "g0.log", GuestPipe(tmp_path / "g0.log", server))
        g.start()
        assert hasattr(g.pipe.proc, "_server")  # forked from the prewarmed zygote
        run_to_the_end(g)
        assert g.result is not None and g.result.ok
    finally:
        server.close()


def test_a_prewarm_the_zygote_cannot_import_is_said_at_the_guests_request(tmp_path: Path, forks: ForkServer):
    forks.prewarm(["no_such_module_anywhere"])  # no answer to it: nobody waits for one
    assert not forks.failed
    assert forks.spawn(dict(os.environ), ["no_such_module_anywhere"], tmp_path / "x.log") is None
    assert "ModuleNotFoundError" in forks.failed  # the guest's own request's answer, not a stale one
