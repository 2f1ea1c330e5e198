"""What a run makes on the host that outlives a runner killed with SIGKILL, and how the next run removes it.

A VM dies with its runner (``setpriv --pdeathsig``), a guest process with its process group; an mdev vGPU instance
(it holds one of the GPU's few vGPU slots) and an MPS control daemon (it daemonises itself) do not. Each is noted
in a ledger, ``<state>/<ledger>/<key>``, before it is made, and forgotten once removed; the next run
that would make one removes those whose maker is gone first, and says so.

``<state>`` is the host's one folder for what benchmark runs share across processes (these ledgers, the core locks
of suites/backends/corelock.py): ``$BENCH_STATE_DIR``, else ``/tmp/gpu-mixed-bench`` (whatever ``$TMPDIR`` says).
Runs that should meet (every run on a host, by default) use the same one; the test harness gives each test its own
(tests/conftest.py). The state root is made writable by every user (1777, as /tmp); a ledger of one user's own
(``per_user``: what a runner owes its store) is ``<ledger>-<uid>``, made 0700 and refused where it is anyone
else's. A note is data from a file another process wrote: read without following a link, only a regular file, at
most ``MAX_NOTE`` bytes, never blocking (a FIFO is skipped, never waited on).
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil

from gpu_probe.shapes import JsonObject
from suites.errors import BenchError

STATE_ENV = "BENCH_STATE_DIR"
# The host's, not this process's temporary folder: two runs whose $TMPDIR differ (a job scheduler sets one per job)
# must still meet at each other's core locks and ledgers.
HOST_STATE = Path("/tmp/gpu-mixed-bench")
MAX_NOTE = 64 * 1024  # a note is a few hundred bytes of JSON


class LedgerError(BenchError):
    """A ledger this user cannot keep (another user's folder, a state root it cannot write): one line."""


def state_root() -> Path:
    """The host's shared benchmark state (read at each use, so a process's setting holds for all it does)."""
    return Path(os.environ.get(STATE_ENV) or HOST_STATE)


@dataclass(frozen=True)
class Ledger:
    """The leftovers of one sort (mdevs, MPS daemons, owed records): a note per thing made, naming its maker (pid
    and start time) and how to remove it. ``root``: where the ledger lives; None: :func:`state_root` at each use."""

    name: str  # its folder under the state root
    root: Path | None = None
    per_user: bool = False  # one folder per user, 0700: its notes are that user's alone

    @property
    def folder(self) -> Path:
        return (self.root or state_root()) / (f"{self.name}-{os.geteuid()}" if self.per_user else self.name)

    def note(self, key: str, **facts: Any) -> None:
        me = psutil.Process()
        self.prepare()
        (self.folder / key).write_text(json.dumps({"pid": me.pid, "started": me.create_time(), **facts}))

    def prepare(self) -> None:
        """The ledger's folder, made (the state root 1777, shared by every user); a per-user one 0700 and this
        user's, else LedgerError."""
        root = self.folder.parent
        try:
            if not root.exists():
                root.mkdir(parents=True, exist_ok=True)
                os.chmod(root, 0o1777)
            self.folder.mkdir(mode=0o700 if self.per_user else 0o777, exist_ok=True)
        except OSError as exc:
            raise LedgerError(f"{self.folder}: {exc.strerror or exc} (the host's benchmark state, {root}, is "
                              f"not writable for this user: its owner can chmod 1777 it, or set {STATE_ENV} to a "
                              "folder of yours)") from None
        problem = self.not_mine()
        if problem:
            raise LedgerError(problem)

    def not_mine(self) -> str:
        """'' where the folder is this user's to keep notes in (or not per-user), else why not."""
        if not self.per_user:
            return ""
        try:
            st = os.lstat(self.folder)
        except OSError:
            return ""
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o022:
            return (f"{self.folder}: not this user's own folder (owner uid {st.st_uid}, mode "
                    f"{stat.filemode(st.st_mode)}): its notes are not trusted; remove it, or set {STATE_ENV} to a "
                    "folder of yours")
        return ""

    def forget(self, key: str) -> None:
        (self.folder / key).unlink(missing_ok=True)

    def orphans(self) -> list[tuple[str, JsonObject]]:
        """(key, facts) of the things whose maker no longer runs; unreadable notes (a link, a FIFO, a device, one
        too large, no JSON object) are skipped; a per-user folder that is not this user's is read as empty."""
        return [(key, facts) for key, facts in self.notes() if not alive(facts)]

    def notes(self) -> list[tuple[str, JsonObject]]:
        """(key, facts) of every readable note, its maker alive or not."""
        if not self.folder.is_dir() or self.not_mine():
            return []
        found = []
        for path in sorted(self.folder.iterdir()):
            facts = read_note(path)
            if facts is not None:
                found.append((path.name, facts))
        return found


def read_note(path: Path) -> JsonObject | None:
    """A note's JSON object, read as hostile data: no link followed, a regular file only (a FIFO would block every
    command that reads the ledger; a link to /dev/zero grew to 14 GB), at most MAX_NOTE bytes; else None."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_NOTE:
            return None
        raw = os.read(fd, MAX_NOTE + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    try:
        facts = json.loads(raw) if len(raw) <= MAX_NOTE else None
    except ValueError:
        return None
    return facts if isinstance(facts, dict) else None


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
