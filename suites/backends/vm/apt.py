"""Debian packages for the VM images, without root: ``apt-get download`` into a folder and ``dpkg-deb -x`` into a
tree. The default image reads the host's apt lists; the NVIDIA layer its own (contrib, non-free: nvidia.py). A
failed call is retried once after its lists are fetched again (a fresh container has none; the archive moves on and a
package of old lists is gone from the mirror)."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Sequence
from pathlib import Path

from suites.errors import ConfigError


def run(cmd: list[str], what: str, cwd: Path | None = None) -> str:
    """``cmd``'s output, or one ConfigError saying what failed and the last line it said."""
    done = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    if done.returncode != 0:
        tail = (done.stderr.strip() or done.stdout.strip()).splitlines()[-1:] or ["?"]
        raise ConfigError(f"{what} failed (exit {done.returncode}): {tail[0][:200]}")
    return done.stdout


def root_options() -> list[str]:
    """As root, no ``_apt`` sandbox user: it could not write into our own folders."""
    return ["-oAPT::Sandbox::User=root"] if os.geteuid() == 0 else []


def host_update() -> None:
    """The host's lists fetched again (only root can; for anyone else the retry finds what there is)."""
    subprocess.run(["apt-get", "update", "-qq"], capture_output=True, check=False)


def apt(args: list[str], options: list[str], cwd: Path | None = None, refresh: Callable[[], None] = host_update,
        answered: Callable[[str], bool] = lambda out: True) -> str:
    """``args`` (apt-get or apt-cache, then its command) with ``options``; when it fails or its output is not
    ``answered`` (apt-cache says nothing of a package its lists lack), once more after ``refresh``."""
    cmd = [args[0], *root_options(), *options, *args[1:]]
    what = " ".join(args[:3])
    try:
        out = run(cmd, what, cwd)
        if answered(out):
            return out
    except ConfigError:
        pass
    refresh()
    out = run(cmd, what, cwd)
    if not answered(out):
        raise ConfigError(f"{what}: apt knows nothing of it (is this Debian, with its lists fetched?)")
    return out


def fetch(packages: list[str], where: Path, options: Sequence[str] = (),
          refresh: Callable[[], None] = host_update) -> list[Path]:
    """``packages`` downloaded into ``where`` and unpacked into ``where/root``; the ``.deb`` files, sorted."""
    where.mkdir(parents=True, exist_ok=True)
    apt(["apt-get", "download", "-q", *packages], list(options), where, refresh)
    debs = sorted(where.glob("*.deb"))
    for deb in debs:
        run(["dpkg-deb", "-x", str(deb), str(where / "root")], f"dpkg-deb -x {deb.name}")
    return debs
