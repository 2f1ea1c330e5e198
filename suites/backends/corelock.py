"""Host-level locks on the cores a run pins its guests to, so two benchmarks on one host never share cores unseen.

Two runs started together would pin their guests to the same core and measure
2,795 vs 4,597 images/s with no warning. So each core a local run pins
is held with ``flock`` on ``<state>/cores/cpu<N>.lock`` (suites/backends/leftovers.py) for
the whole command, the file naming the holder's pid and run directory. The
kernel drops a lock when its holder dies, however it dies, so a crashed run
never leaves a core taken. Placement skips cores other runs hold (and says
so); a run that does not fit in the free cores is refused naming the holders.
"""

from __future__ import annotations

import errno
import fcntl
import os
import time
from dataclasses import dataclass
from pathlib import Path

from suites.backends.leftovers import state_root
from suites.config.paths import shown
from suites.errors import PlacementError


def default_lock_dir() -> Path:
    """The host's core locks, in its shared benchmark state (read at each use: BENCH_STATE_DIR)."""
    return state_root() / "cores"


@dataclass(frozen=True)
class Holder:
    """Who holds a core: a process id and what it said it runs (its run directory)."""

    pid: str
    run: str

    def __str__(self) -> str:
        return f"pid {self.pid}" + (f" `{command_of(self.pid)}`" if command_of(self.pid) else "") + (
            f", run dir {shown(self.run)}" if self.run else "")

    def short(self) -> str:
        """What a one-line waiting note names: the holder's command, its pid and when it started."""
        since = started_at(self.pid)  # its run dir is in the refusal's long form (str): a line holds no path
        return f"a {suite_command_of(self.pid)} run (pid {self.pid}" + (f", started {since}" if since else "") + ")"


def suite_command_of(pid: str) -> str:
    """The command a benchmark process runs (bench, size, study, compare, gpu-check...), from its command line:
    ``python -m suites size``, ``python -m suites.commands.bench``, ``python -m suites.study.command``."""
    args = cmdline(pid)
    module = args[args.index("-m") + 1] if "-m" in args[:-1] else ""
    if not module:
        return "benchmark"
    if module == "suites" and "-m" in args[:-2]:
        return args[args.index("-m") + 2]
    parts = module.split(".")
    return parts[-1] if parts[-1] not in ("command", "__main__") else (parts[-2] if len(parts) > 1 else "benchmark")


def started_at(pid: str) -> str:
    """When the process started, local time (HH:MM), '' where it cannot be read."""
    import psutil

    try:
        return time.strftime("%H:%M", time.localtime(psutil.Process(int(pid)).create_time()))
    except (psutil.Error, ValueError):
        return ""


def cmdline(pid: str) -> list[str]:
    """A process's arguments ([] where they cannot be read: gone, or another PID namespace)."""
    try:
        raw = Path(f"/proc/{int(pid)}/cmdline").read_bytes()
    except (OSError, ValueError):
        return []
    return [part.decode(errors="replace") for part in raw.split(b"\0") if part]


def command_of(pid: str, width: int = 48) -> str:
    """The holder's command line, shortened ('' where it cannot be read: gone, or another PID namespace)."""
    text = " ".join(cmdline(pid))
    return text if len(text) <= width else text[: width - 1] + "…"


def _prepare(lock_dir: Path) -> None:
    """The lock folder, once per peek or lease: shared by every user of the host, so writable by all."""
    lock_dir.mkdir(parents=True, exist_ok=True)
    try:
        os.chmod(lock_dir, 0o1777)
    except OSError:
        pass


def _open(core: int, lock_dir: Path) -> int:
    path = lock_dir / f"cpu{core}.lock"
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    except PermissionError:  # another user's file: holding it needs no write access, naming ourselves does
        fd = os.open(path, os.O_RDONLY)
    return fd


def _try_lock(fd: int, tries: int = 20) -> bool:
    """The lock, if free; retries (5 ms apart) ride out another run's peek, which holds a lock for microseconds."""
    for attempt in range(tries):
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except OSError as exc:
            if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise
        if attempt < tries - 1:
            time.sleep(0.005)
    return False


def _holder(fd: int) -> Holder:
    text = os.pread(fd, 4096, 0).decode(errors="replace").strip()
    pid, _, run = text.partition(" ")
    return Holder(pid or "?", run)


def held_by_others(cores: list[int], lock_dir: Path | None = None) -> dict[int, Holder]:
    """The cores among ``cores`` that another run holds now, with their holders (a peek: nothing is kept).

    One try per core, then one more for those that seemed held, after 10 ms: another run's peek is over by then,
    and a host whose cores another run holds is not kept waiting 100 ms a core."""
    lock_dir = lock_dir or default_lock_dir()
    _prepare(lock_dir)
    held = _peek(cores, lock_dir)
    if held:
        time.sleep(0.01)
        held = _peek(sorted(held), lock_dir)
    return held


def _peek(cores: list[int], lock_dir: Path) -> dict[int, Holder]:
    held = {}
    for core in cores:
        fd = _open(core, lock_dir)
        try:
            if not _unheld(fd):
                held[core] = _holder(fd)
        finally:
            os.close(fd)
    return held


def _unheld(fd: int) -> bool:
    """Whether nobody holds the lock on ``fd`` now (a peek: taken and dropped at once)."""
    if _try_lock(fd, tries=1):
        fcntl.flock(fd, fcntl.LOCK_UN)
        return True
    return False


def describe(held: dict[int, Holder], short: bool = False) -> str:
    """'core 0 (pid 4242 `cmd`, run dir outputs/runs/...); core 1 (...)', one entry per holder (``short``: 'a size
    run (pid 4242, started 14:02) on cores 0,1', what a one-line waiting note names)."""
    by_holder: dict[Holder, list[int]] = {}
    for core, holder in sorted(held.items()):
        by_holder.setdefault(holder, []).append(core)
    if short:  # the holder first: who to wait for
        return "; ".join(f"{h.short()} on core{'s' if len(c) > 1 else ''} {','.join(map(str, c))}"
                         for h, c in by_holder.items())
    return "; ".join(f"core{'s' if len(c) > 1 else ''} {','.join(map(str, c))} ({h})" for h, c in by_holder.items())


class CoresHeld(PlacementError):
    """The run does not fit in the cores other benchmark runs leave free now (it would once they end); ``held``
    names who holds them (what a waiting run says)."""

    def __init__(self, message: str, held: str = "") -> None:
        super().__init__(message)
        self.held = held or message


class CoresTaken(CoresHeld):
    """Another run took a core between this run's placement and its lease: placing again finds other cores."""


class CoreLease:
    """This run's hold on its cores, from :meth:`acquire` to :meth:`release` (or the process's end)."""

    def __init__(self, run: str, lock_dir: Path | None = None) -> None:
        self.run, self.lock_dir = run, lock_dir or default_lock_dir()
        self.fds: dict[int, int] = {}

    def acquire(self, cores: list[int]) -> CoreLease:
        """Hold every core in ``cores``, or none: PlacementError naming whoever holds one."""
        taken: dict[int, Holder] = {}
        _prepare(self.lock_dir)
        for core in sorted(set(cores) - set(self.fds)):
            fd = _open(core, self.lock_dir)
            if not _try_lock(fd):
                taken[core] = _holder(fd)
                os.close(fd)
                continue
            self.fds[core] = fd
            try:
                os.ftruncate(fd, 0)
                os.pwrite(fd, f"{os.getpid()} {self.run}\n".encode(), 0)
            except OSError:
                pass  # read-only (another user's file): held all the same, just not named
        if taken:
            self.release()
            raise CoresTaken(f"cores taken by another benchmark run on this host since planning: "
                             f"{describe(taken)}; run again when it ends")
        return self

    def release(self) -> None:
        for fd in self.fds.values():
            os.close(fd)  # closing the only descriptor drops the flock
        self.fds.clear()

    def __enter__(self) -> CoreLease:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


class Ticket:
    """A run's place in this host's queue for cores: first come, first served. A run that waits for cores takes a
    ticket (``<lock dir>/queue/<start ns>-<pid>``, flock'ed for as long as it waits: a dead waiter's ticket is free,
    so skipped and removed) and tries for its cores only while no live ticket is older than its own; a run that
    starts while others wait queues behind them instead of taking cores that free up under them."""

    def __init__(self, lock_dir: Path | None = None) -> None:
        self.dir = (lock_dir or default_lock_dir()) / "queue"
        _prepare(self.dir)
        self.path = self.dir / f"{time.time_ns():020d}-{os.getpid()}"
        part = self.dir / f".{self.path.name}"  # locked before it is seen: a peek never takes it for a dead one's
        self.fd = os.open(part, os.O_RDWR | os.O_CREAT, 0o666)
        fcntl.flock(self.fd, fcntl.LOCK_EX)
        os.rename(part, self.path)

    def ahead(self) -> int:
        """How many live tickets are older than this one (0: this run's turn)."""
        return len([p for p in waiting(self.dir.parent) if p.name < self.path.name])

    def close(self) -> None:
        try:
            self.path.unlink()
        except OSError:
            pass
        os.close(self.fd)


def waiting(lock_dir: Path | None = None) -> list[Path]:
    """The live tickets of runs waiting for cores on this host, oldest first (a dead waiter's removed)."""
    folder = (lock_dir or default_lock_dir()) / "queue"
    live = []
    for path in sorted(folder.glob("*-*")) if folder.is_dir() else []:
        try:
            fd = os.open(path, os.O_RDONLY)
        except OSError:
            continue
        try:
            if _unheld(fd):  # its run is gone
                try:
                    path.unlink()
                except OSError:  # gone already, or another user's in the shared (sticky) folder: skipped all the same
                    pass
            else:
                live.append(path)
        finally:
            os.close(fd)
    return live
