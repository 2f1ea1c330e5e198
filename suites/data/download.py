"""Fetching a real dataset into the data cache: bounded in time, verified, all or nothing.

What is verified is what the suite reads: each extracted file's MD5 against the
published one (MNIST's four IDX files, CIFAR-10's six batches), so a mirror that
re-compresses the same data is as good as the original, and a truncated, corrupted
or substituted download is refused. A fetch is written into a private folder
beside its destination and renamed into place only once every file checked out:
an interrupted or refused download leaves nothing in the cache.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import shutil
import sys
import tarfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from suites.data.options import DataConfig
from suites.errors import DataError

CHUNK = 1 << 16
PROGRESS_EVERY_S = 2.0


@dataclass(frozen=True)
class Remote:
    """One dataset as a mirror serves it: the archives to fetch, how to unpack them, what the files must hash to."""

    name: str
    folder: str  # relative to the data root, e.g. "MNIST/raw"
    archives: tuple[str, ...]  # file names under the mirror's base URL
    unpack: Callable[[Path, Path], None]  # (downloaded archive, destination folder)
    md5: dict[str, str]  # file in ``folder`` -> MD5 of its content

    def present(self, root: Path) -> bool:
        return all((root / self.folder / name).is_file() for name in self.md5)


def md5(path: Path) -> str:
    h = hashlib.md5()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def gunzip_into(archive: Path, dest: Path) -> None:
    """``x.gz`` -> ``dest/x`` (gzip's own CRC catches a damaged stream)."""
    try:
        with gzip.open(archive, "rb") as src, (dest / archive.name.removesuffix(".gz")).open("wb") as out:
            shutil.copyfileobj(src, out, CHUNK)
    except (OSError, EOFError) as exc:
        raise DataError(f"{archive.name}: not a gzip file ({exc})") from None


def untar_flat(members: set[str]) -> Callable[[Path, Path], None]:
    """Extract only the named regular files of a tar archive, flat into ``dest`` (no paths from the archive are
    trusted: nothing else is ever written)."""

    def unpack(archive: Path, dest: Path) -> None:
        try:
            with tarfile.open(archive, "r:*") as tar:
                for info in tar:
                    base = info.name.rsplit("/", 1)[-1]
                    if info.isreg() and base in members:
                        src = tar.extractfile(info)
                        assert src is not None  # a regular member always has content
                        with src, (dest / base).open("wb") as out:
                            shutil.copyfileobj(src, out, CHUNK)
        except (tarfile.TarError, OSError, EOFError) as exc:
            raise DataError(f"{archive.name}: not a readable tar archive ({exc})") from None

    return unpack


class Deadline:
    """The time one dataset's fetch may take, all files together."""

    def __init__(self, seconds: float) -> None:
        self.seconds, self.end = seconds, time.monotonic() + seconds

    def left(self, what: str) -> float:
        left = self.end - time.monotonic()
        if left <= 0:
            raise DataError(f"{what}: gave up after {self.seconds:g} s (data.download_timeout_s)")
        return left


def fetch(url: str, dest: Path, deadline: Deadline, say: Callable[[str], None]) -> int:
    """Stream ``url`` into ``dest``; bytes written. One DataError line for any network or HTTP failure."""
    try:
        with urllib.request.urlopen(url, timeout=min(30.0, deadline.left(url))) as resp, dest.open("wb") as out:
            total, done, shown = int(resp.headers.get("Content-Length") or 0), 0, time.monotonic()
            say(f"fetching {url}" + (f" ({total / 2**20:.1f} MiB)" if total else ""))  # only once it answered
            while chunk := resp.read(CHUNK):
                out.write(chunk)
                done += len(chunk)
                deadline.left(url)
                if time.monotonic() - shown > PROGRESS_EVERY_S:
                    shown = time.monotonic()
                    say(f"{dest.name}: {done / 2**20:.1f}" + (f" of {total / 2**20:.1f}" if total else "") + " MiB")
            return done
    except urllib.error.HTTPError as exc:
        raise DataError(f"{url}: HTTP {exc.code} {exc.reason}") from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise DataError(f"{url}: {reason}") from None


def verify(remote: Remote, folder: Path, base_url: str) -> None:
    for name, expected in remote.md5.items():
        path = folder / name
        if not path.is_file():
            raise DataError(f"{remote.name} from {base_url}: {name} is not in the download")
        actual = md5(path)
        if actual != expected:
            raise DataError(f"{remote.name} from {base_url}: {name} has MD5 {actual}, not the published {expected} "
                            "(corrupted or not the real file); nothing cached")


def download(remote: Remote, root: Path, base_url: str, timeout_s: float,
             say: Callable[[str], None] | None = None) -> Path:
    """Fetch, unpack and verify ``remote`` into ``root / remote.folder`` (the caller has found no copy there);
    returns that folder. DataError (one line; nothing left behind) when the mirror cannot be reached in time or
    serves anything else."""
    say = say or (lambda line: print(f"data: {remote.name}: {line}", file=sys.stderr, flush=True))
    final = root / remote.folder
    final.parent.mkdir(parents=True, exist_ok=True)
    work = final.parent / f".{final.name}.{os.getpid()}.partial"
    shutil.rmtree(work, ignore_errors=True)
    (work / "archives").mkdir(parents=True)
    deadline, t0, size = Deadline(timeout_s), time.monotonic(), 0
    try:
        for archive in remote.archives:
            path = work / "archives" / archive
            size += fetch(base_url.rstrip("/") + "/" + archive, path, deadline, say)
            remote.unpack(path, work)
            path.unlink()
        (work / "archives").rmdir()
        verify(remote, work, base_url)
        try:
            work.rename(final)
        except OSError:  # another run put a verified copy there first: keep that one
            if not remote.present(root):
                raise
        say(f"{size / 2**20:.1f} MiB in {time.monotonic() - t0:.1f} s, checksums verified, cached in {final}")
        return final
    finally:
        shutil.rmtree(work, ignore_errors=True)


def cached_or_fetched(cfg: DataConfig, remote: Remote, base_url: str) -> tuple[Path | None, str]:
    """The data root of a verified download of ``remote`` in the cache (fetched now if data.download allows), or
    None and why not. data.download=true: a failed fetch is a DataError."""
    cache = Path(cfg.cache_dir) / "downloaded"
    if remote.present(cache):
        return cache, ""
    if cfg.download_mode == "false":
        return None, "data.download=false"
    try:
        download(remote, cache, base_url, cfg.download_timeout_s)
    except DataError as exc:
        if cfg.download_mode == "true":
            raise DataError(f"data.download=true: {exc}") from None
        return None, f"download failed: {exc}"
    return cache, ""
