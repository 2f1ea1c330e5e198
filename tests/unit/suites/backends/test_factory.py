"""Tests of ``suites/backends/factory.py``: ``backend=`` becomes its backend, with its settings passed on; Ray
missing from this Python is one line naming the extra."""

from __future__ import annotations

import importlib.util

import pytest

from suites.backends import factory
from suites.backends.local import LocalBackend
from suites.backends.vm.backend import VmBackend
from suites.errors import ConfigError
from tests.support.helpers import compose_config


def test_local_is_the_default_and_carries_overcommit_and_mps():
    plain = factory.backend_for(compose_config())
    assert isinstance(plain, LocalBackend) and not plain.mps and not plain.cpu_overcommit
    shared = factory.backend_for(compose_config("sharing=mps", "scenario.cpu_overcommit=true"))
    assert isinstance(shared, LocalBackend) and shared.mps and shared.cpu_overcommit


def test_vm_gives_the_vm_backend_with_its_settings(monkeypatch):
    made: list[tuple] = []
    monkeypatch.setattr(factory, "VmBackend", lambda *args: made.append(args) or VmBackend)  # no image needed
    cfg = compose_config("backend=vm", "scenario.cpu_overcommit=true")
    assert factory.backend_for(cfg) is VmBackend and made == [(cfg.vm, True)]


def test_ray_missing_from_this_python_is_one_line_naming_the_extra(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "ray" else real(name, *a))
    with pytest.raises(ConfigError, match=r"^backend=ray: ray is not installed in this Python \(extra ray: "):
        factory.backend_for(compose_config("backend=ray"))
