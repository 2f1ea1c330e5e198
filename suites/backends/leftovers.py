"""What a run makes on the host that outlives a runner killed with SIGKILL, and how the next run removes it.

A VM dies with its runner (``setpriv --pdeathsig``), a guest process with its process group; an mdev vGPU instance
(it holds one of the GPU's few vGPU slots) and an MPS control daemon (it daemonises itself) do not. Each is noted
in a ledger, ``<state>/<ledger>/<key>``, before it is made, and forgotten once removed; the next run
that would make one removes those whose maker is gone first, and says so.

``<state>`` is the host's one folder for what benchmark runs share across processes (these ledgers, the core locks
of suites/backends/corelock.py): ``$BENCH_STATE_DIR``, else ``/tmp/gpu-mixed-bench`` (whatever ``$TMPDIR`` says).
Runs that should meet (every run on a host, by default) use the same one; the test harness gives each test its own
(tests/conftest.py).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil

from gpu_probe.shapes import JsonObject

STATE_ENV = "BENCH_STATE_DIR"
# The host's, not this process's temporary folder: two runs whose $TMPDIR differ (a job scheduler sets one per job)
# must still meet at each other's core locks and ledgers.
HOST_STATE = Path("/tmp/gpu-mixed-bench")


def state_root() -> Path:
    """The host's shared benchmark state (read at each use, so a process's setting holds for all it does)."""
    return Path(os.environ.get(STATE_ENV) or HOST_STATE)


@dataclass(frozen=True)
class Ledger:
    """The leftovers of one sort (mdevs, MPS daemons, owed records): a note per thing made, naming its maker (pid
    and start time) and how to remove it. ``root``: where the ledger lives; None: :func:`state_root` at each use."""

    name: str  # its folder under the state root
    root: Path | None = None

    @property
    def folder(self) -> Path:
        return (self.root or state_root()) / self.name

    def note(self, key: str, **facts: Any) -> None:
        me = psutil.Process()
        self.folder.mkdir(parents=True, exist_ok=True)
        (self.folder / key).write_text(json.dumps({"pid": me.pid, "started": me.create_time(), **facts}))

    def forget(self, key: str) -> None:
        (self.folder / key).unlink(missing_ok=True)

    def orphans(self) -> list[tuple[str, JsonObject]]:
        """(key, facts) of the things whose maker no longer runs; unreadable notes are skipped."""
        found = []
        for path in sorted(self.folder.iterdir()) if self.folder.is_dir() else []:
            try:
                facts = json.loads(path.read_text())
            except (OSError, ValueError):
                continue
            if isinstance(facts, dict) and not alive(facts):
                found.append((path.name, facts))
        return found


def alive(facts: JsonObject) -> bool:
    """The maker still runs: its pid, started when the note says (a reused pid is another process)."""
    try:
        return abs(psutil.Process(int(facts["pid"])).create_time() - float(facts["started"])) < 1.0
    except (psutil.Error, KeyError, TypeError, ValueError):
        return False


def own_dir(prefix: str, root: Path) -> Path:
    """A new folder ``<root>/<prefix><pid>-<random>`` of this process's own (a run's VM sockets, a Ray agent's guest
    log). A process killed with SIGKILL runs no ``finally`` to remove its folder: those of makers no longer running
    under ``root`` are removed first (their VMs and guests died with them)."""
    root.mkdir(parents=True, exist_ok=True)
    for d in root.glob(f"{prefix}*-*"):
        pid = d.name[len(prefix):].split("-")[0]
        if pid.isdigit() and not psutil.pid_exists(int(pid)):
            shutil.rmtree(d, ignore_errors=True)
    return Path(tempfile.mkdtemp(prefix=f"{prefix}{os.getpid()}-", dir=root))
