"""A command's own settings (``study.*``, ``sizing.*``, gpu-check's keys): a frozen dataclass whose ``check()``
returns it checked, merged from layers of OmegaConf values, validated, its marked paths made absolute against the
launch folder; any problem one ConfigError.

The ``key=value`` arguments are read with Hydra's override grammar, as every bench override is: ``mix={cad:40,ml:4}``
and ``mix={cad: 40, ml: 4}`` are one mapping either way (YAML's own flow syntax would read ``{cad:40}`` as a key
named ``cad:40``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypeVar

from omegaconf import DictConfig, ListConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from suites.config.paths import absolute_paths, launch_dir
from suites.config.schema import one_line
from suites.errors import ConfigError

__all__ = ["load_own"]

T = TypeVar("T")


def parsed(what: str, dotlist: list[str], lists: tuple[str, ...] = ()) -> Any:
    """The ``key=value`` arguments as one OmegaConf layer; an empty mapping, a sweep or a ``+``/``~`` is
    refused (a ``{}`` merged over a mapping would change nothing, silently), but for a key of ``lists``, whose
    ``a,b`` (Hydra's sweep) is read as the list ``[a,b]`` (gpu-check's ``only=a,b2``, as documented)."""
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.core.override_parser.types import ChoiceSweep
    from hydra.errors import HydraException

    try:
        overrides = OverridesParser.create().parse_overrides(dotlist)
    except HydraException as exc:
        raise ConfigError(f"{what}: {one_line(exc)}") from exc
    layer = OmegaConf.create({})
    for o in overrides:
        key, value = f"{what}.{o.key_or_group}", o.value()
        if o.key_or_group in lists and isinstance(value, ChoiceSweep) and not value.shuffle:
            value = [str(v) for v in value.list]
        elif o.is_sweep_override() or not o.is_force_add() and (o.is_add() or o.is_delete()):
            raise ConfigError(f"{key}: give one value as {key}=<value> (no sweep, '+' or '~' here)")
        if isinstance(value, dict) and not value:
            raise ConfigError(f"{key}={o.get_value_element_as_str()}: empty: name its entries "
                              f"({key}.<name>=<value>, or {key}={{<name>: <value>}})")
        OmegaConf.update(layer, o.key_or_group, value, merge=True, force_add=True)
    return layer


def load_own(cls: type[T], what: str, dotlist: list[str], files: tuple[Path, ...] = (),
             lists: tuple[str, ...] = ()) -> T:
    """``cls``'s defaults with ``files`` and then ``dotlist`` (``key=value``, the prefix taken off) over them,
    checked; errors say ``what`` first. A key of ``lists`` reads ``a,b`` as a list."""
    try:
        layers = [*(OmegaConf.load(f) for f in files), parsed(what, dotlist, lists)]
        settings = OmegaConf.to_object(OmegaConf.merge(writable(OmegaConf.structured(cls)), *layers))
    except (OmegaConfBaseException, ValueError, OSError) as exc:
        raise ConfigError(f"{what}: {one_line(exc)}") from exc
    assert isinstance(settings, cls)
    checked = settings.check()  # type: ignore[attr-defined]  # an old key's value carried to its new name
    return absolute_paths(checked, launch_dir())


def writable(schema: Any) -> Any:
    """A frozen dataclass's schema (read-only, as OmegaConf makes it, down to each frozen dataclass it holds) made
    writable for the layers to merge onto: the settings built from it are frozen all the same."""
    OmegaConf.set_readonly(schema, False)
    for key in schema if isinstance(schema, DictConfig) else range(len(schema)):
        child = schema[key]
        if isinstance(child, (DictConfig, ListConfig)):
            writable(child)
    return schema
