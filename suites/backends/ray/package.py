"""What ``ray.working_dir`` ships: the files Ray's own packer takes from the folder, and a check, before Ray is
joined, that every module of the suite the guests import is among them.

Ray reads ``ray.excludes`` (and any ``.gitignore`` / ``.rayignore`` in the folder) as gitignore patterns, where an
unanchored ``data`` matches every folder named ``data``, ``suites/data/`` included: a node without the suite
installed then fails every guest with ``No module named 'suites.data'``. The file list is built by Ray's own
traversal (``ray._private.runtime_env.packaging``, pinned with Ray in pyproject.toml), so what is checked is what
Ray would upload.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

from suites.errors import ConfigError

# The suite's packages: a guest imports its protocol, workload plugin and data from suites/, its sampling from
# gpu_probe/. Where the shipped folder holds them, every module of them must go.
SUITE_PACKAGES = ("suites", "gpu_probe")
# Ray's switch for whether .gitignore files count (its .rayignore files always do)
IGNORE_GITIGNORE = "RAY_RUNTIME_ENV_IGNORE_GITIGNORE"


def shipped_files(folder: Path, excludes: list[str]) -> set[str]:
    """The files (POSIX paths relative to ``folder``) Ray would pack for ``working_dir=folder``."""
    from ray._private.runtime_env.packaging import _dir_travel, _get_excludes

    root = folder.absolute()
    found: set[str] = set()

    def keep(path: Path) -> None:
        if path.is_file():
            found.add(path.relative_to(root).as_posix())

    quiet = logging.getLogger("gpu-mixed-bench.ray-package")
    quiet.setLevel(logging.WARNING)  # Ray logs every ignore file it honours at INFO
    include_gitignore = os.environ.get(IGNORE_GITIGNORE, "0") != "1"
    _dir_travel(root, [_get_excludes(root, excludes)], keep, include_gitignore=include_gitignore, logger=quiet)
    return found


def suite_modules(folder: Path) -> list[str]:
    """The suite's module files in ``folder`` (relative POSIX paths); none where the folder is not the suite's."""
    out = []
    for package in SUITE_PACKAGES:
        base = folder / package
        if (base / "__init__.py").is_file():
            out += sorted(p.relative_to(folder).as_posix() for p in base.rglob("*.py")
                          if "__pycache__" not in p.parts)
    return out


def dropped_by(path: str, excludes: list[str]) -> str:
    """The first ``ray.excludes`` entry that drops ``path`` (the file or a folder above it); "" where none does
    (an ignore file in the folder did)."""
    from ray._private.thirdparty.pathspec import PathSpec

    parts = path.split("/")
    candidates = ["/".join(parts[:i]) for i in range(1, len(parts) + 1)]
    for entry in excludes:
        spec = PathSpec.from_lines("gitwildmatch", [entry])
        if any(spec.match_file(c) for c in candidates):
            return entry
    return ""


def package_of(path: str) -> str:
    """``suites/data/mnist.py`` -> ``suites.data``, ``suites/errors.py`` -> ``suites``: the package (at most two
    levels deep) a dropped file belongs to, as a guest imports it."""
    return ".".join(path.split("/")[:-1][:2])


def check_shipped(working_dir: str, excludes: list[str]) -> None:
    """One ConfigError line where the folder holds the suite and Ray would ship it without some of its modules,
    naming the package, how many files and the entry that drops them."""
    folder = Path(working_dir)
    modules = suite_modules(folder)
    if not modules:
        return  # not the suite's folder: the nodes must have the suite installed (said in the placement note)
    shipped = shipped_files(folder, excludes)  # one walk of the folder: one per module took 15 s for the suite's
    missing = [m for m in modules if m not in shipped]
    if not missing:
        return
    packages = sorted({package_of(m) for m in missing})
    named = ", ".join(packages[:4]) + (f" and {len(packages) - 4} more" if len(packages) > 4 else "")
    entries = sorted({dropped_by(m, excludes) for m in missing})
    why = ", ".join(f"'{e}'" if e else "a .gitignore/.rayignore in it" for e in entries)
    anchored = [f"'/{e}'" for e in entries if e and not e.startswith("/")]
    fix = (f"anchor it at the folder's root ({', '.join(anchored)})" if anchored
           else "leave the suite's folders out of it")
    raise ConfigError(f"ray.excludes: the suite shipped with ray.working_dir={working_dir} would lack "
                      f"{len(missing)} module file(s) of {named} (the guests import them), dropped by "
                      f"{why}: {fix}")
