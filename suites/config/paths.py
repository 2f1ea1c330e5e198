"""Paths resolved once: when a config is loaded, every path and local store URI in it becomes absolute, against the
directory the command was started in. Nothing later takes a base directory.

A config dataclass marks such a field in its metadata: ``field(default=..., metadata={"path": True})`` for a file
or folder (empty or None: unset, left as is), ``metadata={"uri": True}`` for an MLflow tracking URI (a sqlite or
file store's path is made absolute; a server's address is left alone). The markers are plain dicts so that the
layers below this one (data, workloads) mark their fields without importing it.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import TypeVar
from urllib.parse import urlparse

from hydra.core.hydra_config import HydraConfig

__all__ = ["absolute_paths", "absolute_uri", "launch_dir"]

T = TypeVar("T")


def launch_dir() -> Path:
    """Where the command was started (Hydra >= 1.2 does not chdir; inside the Hydra app its runtime.cwd says it)."""
    return Path(HydraConfig.get().runtime.cwd) if HydraConfig.initialized() else Path.cwd()


def absolute_uri(uri: str, launch: Path) -> str:
    """A tracking URI with a sqlite or file store's path absolute against ``launch``; a server's as given."""
    if uri.startswith("sqlite:///") and not uri.startswith("sqlite:////"):
        return f"sqlite:///{(launch / uri[len('sqlite:///'):]).resolve()}"
    parsed = urlparse(uri)
    if parsed.scheme in ("", "file"):
        return (launch / (parsed.path if parsed.scheme else uri)).resolve().as_uri()
    return uri


def absolute_paths(node: T, launch: Path) -> T:
    """A copy of config dataclass ``node`` whose marked fields (and those of the dataclasses it holds) are absolute
    against ``launch``; ``node`` itself is not changed."""
    changes: dict[str, object] = {}
    for f in dataclasses.fields(node):  # type: ignore[arg-type]
        value = getattr(node, f.name)
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            new = absolute_paths(value, launch)
        elif f.metadata.get("path") and isinstance(value, str) and value:
            new = str((launch / value).resolve())
        elif f.metadata.get("uri") and isinstance(value, str) and value:
            new = absolute_uri(value, launch)
        else:
            continue
        if new is not value:
            changes[f.name] = new
    return dataclasses.replace(node, **changes) if changes else node  # type: ignore[type-var]


def shown(path: str | Path) -> str:
    """A path as a person reads it on the console: relative to the working directory where it lies under it,
    else as it is."""
    try:
        return str(Path(path).resolve().relative_to(Path.cwd().resolve())) or "."
    except (ValueError, OSError):
        return str(path)


def relative_paths(text: str) -> str:
    """Absolute paths under the working directory shown relative to it (``outputs/runs/...``, not
    ``/home/me/gpu-mixed-bench/outputs/runs/...``): shorter lines that still open from where the user stands."""
    cwd = str(Path.cwd().resolve())
    if cwd == "/":
        return text
    return re.sub(rf"(?<![\w./-]){re.escape(cwd)}/(?=[\w.-])", "", text)
