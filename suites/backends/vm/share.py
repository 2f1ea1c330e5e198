"""What a guest VM sees of the host: what a guest needs, read-only, at the host's own paths, and nothing else.

virtiofsd exports one folder. Were it the host's root, every file the runner can read (as root, /etc/shadow,
SSH keys, tokens, other users' homes) would be readable in every guest VM. So it exports a *view*: an empty tmpfs, in a
mount namespace of virtiofsd's own, holding read-only bind mounts of

- the system: ``/usr`` and the merged-usr links (``/bin`` → ``usr/bin``, ...);
- the parts of ``/etc`` a program reads (the loader's cache, users and groups, name service, certificates, time
  zone, GL vendor files), not the rest (``shadow``, ``ssh/``, credentials);
- Python: the interpreter's prefix and the venv; the repository;
- the run directory (the boot script, the guest's log) and every existing absolute path the guest's spec names
  (``data.root`` and its cache, a trace file).

A symlink among them is made again in the view and its target shared too. The namespace ends with virtiofsd:
nothing to unmount, nothing visible on the host. It needs what virtiofsd already needs (root: mounts and chroot).
"""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from suites.backends.handle import REPO_ROOT
from suites.guest.protocol import GuestSpec

SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
ETC = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "alternatives", "passwd", "group", "nsswitch.conf", "hosts",
       "host.conf", "resolv.conf", "gai.conf", "protocols", "services", "localtime", "timezone", "ssl/certs",
       "ssl/openssl.cnf", "ca-certificates", "ca-certificates.conf", "os-release", "debian_version", "mime.types",
       "fonts", "glvnd", "vulkan", "OpenCL", "machine-id")  # not shadow, gshadow, ssh/, ssl/private, sudoers, ...
# Where init.sh mounts the guest's own /proc, /sys, /dev and scratch: empty folders in the view.
MOUNTPOINTS = ("proc", "sys", "dev", "run", "tmp")


def spec_paths(value: Any) -> Iterator[Path]:
    """Every existing absolute path among the strings of a guest spec's config (data root, cache, trace files)."""
    if isinstance(value, dict):
        for v in value.values():
            yield from spec_paths(v)
    elif isinstance(value, list | tuple):
        for v in value:
            yield from spec_paths(v)
    elif isinstance(value, str) and value.startswith("/") and "\n" not in value and os.path.lexists(value):
        yield Path(value)


def wanted(spec: GuestSpec, run_dir: Path) -> list[Path]:
    """The host paths a guest VM is given, before links are followed."""
    return [*map(Path, SYSTEM), *(Path("/etc", e) for e in ETC), Path(sys.base_prefix), Path(sys.prefix),
            REPO_ROOT, run_dir, *spec_paths([spec.workload_config, spec.data, spec.env])]


def plan(paths: list[Path]) -> tuple[list[Path], list[tuple[Path, str]]]:
    """(paths to bind, (link, its target) to make again): each existing path with its parent's links resolved; a
    link's target is shared too; a path inside another shared folder is not bound again."""
    binds: set[Path] = set()
    links: dict[Path, str] = {}
    todo = [p for p in paths if os.path.lexists(p)]
    while todo:
        p = todo.pop()
        p = Path(os.path.realpath(p.parent), p.name) if p != Path("/") else p
        if p.is_symlink():
            if p not in links:
                links[p] = os.readlink(p)
                todo.append(Path(os.path.realpath(p)))
        elif p.exists() and p != Path("/"):  # never the whole root, whatever a config names
            binds.add(p)
    kept: list[Path] = []
    for p in sorted(binds, key=lambda q: len(q.parts)):
        if not any(k in p.parents for k in kept):  # binds is a set: p is not in kept; a parent is a folder
            kept.append(p)
    return sorted(kept), sorted((k, v) for k, v in links.items() if not any(b in k.parents for b in kept))


def view_script(view: Path, binds: list[Path], links: list[tuple[Path, str]]) -> str:
    """Shell lines that build the view at ``view`` (run in a mount namespace of its own, as root)."""
    q = shlex.quote
    lines = ["set -e", f"mount -t tmpfs -o mode=0755,size=1m gmb-view {q(str(view))}",
             f"mkdir {' '.join(q(str(view / m)) for m in MOUNTPOINTS)}"]
    for p in binds:
        at = q(f"{view}{p}")
        make = f"mkdir -p {at}" if p.is_dir() else f"mkdir -p {q(f'{view}{p.parent}')} && : > {at}"
        lines.append(f"{make} && mount --bind -o ro {q(str(p))} {at}")
    for link, target in links:
        lines.append(f"mkdir -p {q(f'{view}{link.parent}')} && ln -s {q(target)} {q(f'{view}{link}')}")
    return "\n".join(lines) + "\n"


def virtiofsd_in_view(fsd_argv: list[str], view: Path, spec: GuestSpec, run_dir: Path) -> list[str]:
    """virtiofsd exporting the guest's view (``fsd_argv`` exports ``view``), started in a mount namespace of its
    own that builds the view first."""
    binds, links = plan(wanted(spec, run_dir))
    script = view_script(view, binds, links) + "exec " + " ".join(map(shlex.quote, fsd_argv)) + "\n"
    return ["unshare", "--mount", "--propagation", "private", "/bin/sh", "-c", script]
