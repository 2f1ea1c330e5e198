"""A makeself archive (NVIDIA's ``.run`` files) read as data: its shell stub is never run.

A ``.run`` is a shell script of N lines followed by a compressed tar. Running it (``sh x.run --extract-only``)
would run whatever the file says: a file that only looks like NVIDIA's (a user's download, a renamed script)
would run on this host with the user's rights. Here the stub is only read for where the tar starts (makeself
writes ``head -n N`` into it, older ones ``skip=N``) and how long it is (``filesizes``); the tar is decompressed
by Python (gzip, bzip2, xz; zstd through the ``zstd`` program, a decompressor) and unpacked with tarfile's
``data`` filter: no links or files outside the target, no device files, no set-uid bits.
"""

from __future__ import annotations

import io
import re
import shutil
import subprocess
import tarfile
from pathlib import Path

from suites.errors import ConfigError

__all__ = ["payload_span", "unpack"]

STUB_MAX = 64 * 1024  # NVIDIA's stubs are ~25 KB; makeself's own ~20 KB
LINES = re.compile(rb"""head\s+-n\s+"?(\d+)"?|^skip="?(\d+)"?\s*$""", re.M)
SIZES = re.compile(rb'^filesizes="\s*(\d+)', re.M)
MAGIC = ((b"\x1f\x8b", "gz"), (b"BZh", "bz2"), (b"\xfd7zXZ\x00", "xz"), (b"\x28\xb5\x2f\xfd", "zstd"))


def payload_span(path: Path) -> tuple[int, int | None, str]:
    """(where the payload starts, its length if the stub says, its compression) of makeself archive ``path``;
    else one ConfigError saying what is missing."""
    with path.open("rb") as f:
        head = f.read(STUB_MAX)
    m = LINES.search(head)
    if not m:
        raise ConfigError(f"vm.guest_driver={path}: not a makeself archive (its stub names no payload offset: "
                          "no `head -n N` or skip=N)")
    lines = int(m.group(1) or m.group(2))
    parts = head.split(b"\n", lines)
    if len(parts) <= lines:
        raise ConfigError(f"vm.guest_driver={path}: not a makeself archive (its stub says the payload starts after "
                          f"line {lines}; the file's first {len(head)} bytes have {len(parts) - 1} lines)")
    start = len(head) - len(parts[-1])
    compression = next((k for magic, k in MAGIC if parts[-1].startswith(magic)), "")
    if not compression and parts[-1][257:262] != b"ustar":
        raise ConfigError(f"vm.guest_driver={path}: not a makeself archive (no compressed tar after line {lines}: "
                          f"it starts with {parts[-1][:8]!r})")
    sizes = SIZES.search(head)
    return start, int(sizes.group(1)) if sizes else None, compression


def unpack(path: Path, target: Path) -> Path:
    """The payload of makeself archive ``path`` unpacked into ``target`` (made): data only, nothing run."""
    start, length, compression = payload_span(path)
    with path.open("rb") as f:
        f.seek(start)
        data = f.read(length) if length else f.read()
    if compression == "zstd":
        if not shutil.which("zstd"):
            raise ConfigError(f"vm.guest_driver={path}: its payload is zstd-compressed and this host has no zstd "
                              "(Debian package zstd)")
        data = subprocess.run(["zstd", "-dc"], input=data, capture_output=True, check=True).stdout
        compression = ""
    target.mkdir(parents=True, exist_ok=True)
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode=f"r:{compression}" if compression else "r:") as tar:
            tar.extractall(target, filter="data")
    except (tarfile.TarError, OSError, EOFError) as exc:
        raise ConfigError(f"vm.guest_driver={path}: its payload could not be unpacked "
                          f"({type(exc).__name__}: {str(exc)[:120]})") from exc
    return target
