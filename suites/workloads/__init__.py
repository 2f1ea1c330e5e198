"""Workload plugins, found by discovery (TorchBench's ``list_models`` style).

A workload is one module under ``suites/workloads/`` holding a concrete
:class:`~suites.workloads.base.Workload` subclass with a ``name``: its config
dataclass, dataset, category (ML / CAD / probe) and smoke sizes are declared on the class.
Nothing else lists it; :func:`registry` imports every module of this package
and collects the classes. A ``configs/workload/<name>.yaml`` is optional (it
only sets values; without one the config dataclass's defaults are the config).
"""

from __future__ import annotations

import importlib
import pkgutil
from functools import cache
from types import ModuleType

from suites.workloads.base import Workload


@cache
def registry() -> dict[str, type[Workload]]:
    """Every workload plugin by name (imported once per process; frameworks stay unimported)."""
    found: dict[str, type[Workload]] = {}
    for info in pkgutil.walk_packages(__path__, prefix=f"{__name__}."):
        if info.name.endswith(".__main__"):  # command lines, not plugins
            continue
        for obj in plugins(importlib.import_module(info.name)):
            if obj.name in found:
                raise TypeError(f"workload {obj.name!r} is defined twice: {found[obj.name]} and {obj}")
            found[obj.name] = obj
    return dict(sorted(found.items()))


def plugins(module: ModuleType) -> list[type[Workload]]:
    """The workload plugins ``module`` defines: its own concrete Workload subclasses that have a name."""
    return [obj for obj in vars(module).values() if isinstance(obj, type) and issubclass(obj, Workload)
            and obj.__module__ == module.__name__ and "name" in vars(obj)]


def list_workloads() -> list[str]:
    return list(registry())


def workload_class(name: str) -> type[Workload]:
    """The plugin named ``name``. The module named after it (``fixed-step``: ``fixed_step.py``) is tried first and
    alone, so a guest imports its own plugin only (discovering all of them cost every guest process 0.13 s, paid
    again each repeat); a plugin that lives elsewhere, or a name that none is, by discovery (its KeyError)."""
    own = f"{__name__}.{name.replace('-', '_')}"
    if name.replace("-", "_").isidentifier():
        try:
            module = importlib.import_module(own)
        except ModuleNotFoundError as exc:
            if exc.name != own:  # the module is there and lacks a library: the same error discovery would meet
                raise
        else:
            for obj in plugins(module):
                if obj.name == name:
                    return obj
    return registry()[name]
