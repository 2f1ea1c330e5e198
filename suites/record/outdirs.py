"""Folders a command writes, checked before anything starts: each can be made, none is in the source tree, and an
explicit run directory is new (or empty) and this run's alone.

Why: a run directory ``hydra.run.dir=configs`` would have the run's ``config.yaml`` replace
``configs/config.yaml`` (every later run failing); two runs given one directory would both write into it (one
run's files lost); a directory that cannot be made (``/proc/x/run``) would end in Hydra's own tracebacks.
"""

from __future__ import annotations

import errno
import fcntl
import os
import shutil
from pathlib import Path

from suites.errors import ConfigError

REPO_ROOT = Path(__file__).resolve().parents[2]
# Where a command may write inside the repository: the folders git ignores for that (.gitignore).
WRITABLE_IN_REPO = ("outputs", "multirun", "data", "mlruns")
MIN_FREE_BYTES = 16 * 2**20  # a full disk is refused up front: results.json, samples.csv and plots need room


def require_makeable(path: Path, key: str, keep: bool = False) -> list[Path]:
    """``path`` is (or can be made as) a directory this process can write in: tried for real (a pseudo file system
    such as /proc admits a write permission it then refuses), and the folders the try made are removed again unless
    ``keep`` and it succeeded (a caller that makes ``path`` next: another run making its own folder beside it in the
    same new parent must not see that parent vanish). The folders it made and kept, deepest last."""
    missing: list[Path] = []
    made: list[Path] = []
    probe = path
    ok = False
    try:
        while not probe.exists():
            missing.append(probe)
            probe = probe.parent
        if not probe.is_dir():
            raise ConfigError(f"{key}: {path} cannot be created ({probe} is not a directory)")
        for folder in reversed(missing):
            try:
                folder.mkdir()
                made.append(folder)
            except FileExistsError:
                if not folder.is_dir():
                    raise
                # another run made it meanwhile (two runs started at once under one new folder): not ours
        if not os.access(path, os.W_OK | os.X_OK):
            raise ConfigError(f"{key}: {path} is not writable ({path} is read-only for this user)")
        free = shutil.disk_usage(path).free
        if free < MIN_FREE_BYTES:
            raise ConfigError(f"{key}: {path} has {free / 2**20:.1f} MiB free on its disk; a run needs at least "
                              f"{MIN_FREE_BYTES // 2**20} MiB (its records would be cut short)")
        ok = True
        return made if keep else []
    except OSError as exc:
        raise ConfigError(f"{key}: {path} cannot be created ({exc.strerror or exc})") from None
    finally:
        for folder in [] if ok and keep else reversed(made):
            try:
                folder.rmdir()
            except OSError:
                pass


def require_named(path: Path | str, key: str) -> None:
    """A folder given by name: an empty one would be the working directory (``--out ''`` wrote the repository's
    root)."""
    if not str(path).strip():
        raise ConfigError(f"{key}: empty; name a folder (under outputs/, or outside the source tree)")


def require_output_dir(path: Path | str, key: str, keep: bool = False) -> list[Path]:
    """The one check of a folder a command writes: named (an empty name would be the working directory),
    outside the source tree, and makeable and writable with room (:func:`require_makeable`)."""
    require_named(path, key)
    require_outside_source(Path(path), key)
    return require_makeable(Path(path), key, keep)


def require_outside_source(path: Path, key: str, repo: Path = REPO_ROOT) -> None:
    """Never inside the suite's own source tree: only the repository's ignored output folders take results."""
    where = path.resolve()
    if where != repo and repo not in where.parents:
        return
    rel = where.relative_to(repo)
    if not rel.parts or rel.parts[0] not in WRITABLE_IN_REPO:
        raise ConfigError(f"{key}: {path} is in the suite's source tree (its files would be overwritten); use a "
                          "folder under outputs/ or outside it")


class RunDirClaim:
    """This command's hold on an explicit run directory, from :func:`claim_run_dir` to the process's end: a
    ``flock`` on the directory itself (the kernel drops it however the process ends), so a second command given
    the same directory is refused while the first runs, and one after it finds the first's files."""

    def __init__(self, path: Path, fd: int, made: list[Path] | None = None) -> None:
        self.path, self.fd, self.made = path, fd, list(made or [])

    def release(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def tidy(self) -> None:
        """The folders the claim made that are still empty (a run refused before anything started) go again:
        ``hydra.run.dir=/tmp/a/b/c`` refused leaves no ``/tmp/a/b``."""
        for folder in reversed(self.made):
            try:
                folder.rmdir()
            except FileNotFoundError:
                continue  # the run's own folder, already discarded (discard_unused)
            except OSError:
                return  # not empty: something ran and wrote there (or another run uses it)


def claim_run_dir(path: Path, key: str = "hydra.run.dir") -> RunDirClaim:
    """Make ``path`` (one ConfigError where it cannot be), hold it for this command, and refuse it if another
    command holds it or it already holds files."""
    made = require_output_dir(path, key, keep=True)
    try:
        path.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    except OSError as exc:
        raise ConfigError(f"{key}: {path} cannot be created ({exc.strerror or exc})") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        os.close(fd)
        if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
            raise ConfigError(f"{key}: {path} cannot be locked ({exc.strerror})") from None
        raise ConfigError(f"{key}: {path} is in use by another benchmark run on this host; give each run its own "
                          "run directory") from None
    held = sorted(p.name for p in path.iterdir())
    if held:
        os.close(fd)
        RunDirClaim(path, -1, made).tidy()
        shown = ", ".join(held[:3]) + (", ..." if len(held) > 3 else "")
        raise ConfigError(f"{key}: {path} already holds files ({shown}): a run directory must be new or empty, so "
                          "no run's results replace another's")
    # made and empty: a run that ends before anything starts removes it (discard_unused, then tidy)
    return RunDirClaim(path, fd, made)


RESULT_FILES = ("results.json", "comparison.csv")  # what a finished run (or comparison) leaves at its top


def half_written_beside(run_dir: Path) -> Path | None:
    """The newest other run directory beside ``run_dir`` (Hydra's ``.hydra/`` in it), if it holds no results and no
    live run holds it: a runner killed (SIGKILL, power) before it could record anything. Only the newest, so the
    run after it says so once and later runs do not repeat it."""
    parent = run_dir.parent
    try:
        others = [d for d in parent.iterdir() if d != run_dir and (d / ".hydra").is_dir()]
    except OSError:
        return None
    if not others:
        return None
    newest = max(others, key=lambda d: (d / ".hydra").stat().st_mtime)
    if any((newest / f).exists() for f in RESULT_FILES) or held(newest):
        return None
    return newest


def held(folder: Path) -> bool:
    """Whether a live run holds ``folder`` (its :class:`RunDirClaim`)."""
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        return False
    except OSError:
        return True
    finally:
        os.close(fd)
