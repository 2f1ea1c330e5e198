"""A command's own settings (``study.*``, ``sizing.*``): a dataclass with ``check()``, merged from layers of
OmegaConf values, validated, its marked paths made absolute against the launch folder; any problem one ConfigError."""

from __future__ import annotations

from pathlib import Path
from typing import TypeVar

from omegaconf import OmegaConf
from omegaconf.errors import OmegaConfBaseException

from suites.config.paths import absolute_paths, launch_dir
from suites.config.schema import one_line
from suites.errors import ConfigError

__all__ = ["load_own"]

T = TypeVar("T")


def load_own(cls: type[T], what: str, dotlist: list[str], files: tuple[Path, ...] = ()) -> T:
    """``cls``'s defaults with ``files`` and then ``dotlist`` (``key=value``, the prefix taken off) over them,
    checked; errors say ``what`` first."""
    try:
        layers = [*(OmegaConf.load(f) for f in files), OmegaConf.from_dotlist(dotlist)]
        settings = OmegaConf.to_object(OmegaConf.merge(OmegaConf.structured(cls), *layers))
    except (OmegaConfBaseException, ValueError, OSError) as exc:
        raise ConfigError(f"{what}: {one_line(exc)}") from exc
    assert isinstance(settings, cls)
    settings.check()  # type: ignore[attr-defined]
    return absolute_paths(settings, launch_dir())
