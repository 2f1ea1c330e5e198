"""Tests of ``suites/commands/__init__.py``."""

from __future__ import annotations

import importlib

import pytest

from suites.commands import COMMANDS, usage
from suites.commands import main as commands_main


def test_every_command_is_listed_and_has_main():
    listed = usage()
    for name, (module, what, _) in COMMANDS.items():
        assert f"  {name} " in listed and what in listed
        assert callable(importlib.import_module(module).main), module
    assert set(COMMANDS) >= {"bench", "study", "report", "sync", "gpu-check", "bench-ml", "bench-vm", "bench-peer"}


def test_an_unknown_command_is_one_error_line(capsys: pytest.CaptureFixture[str]):
    assert commands_main(["benhc"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: no command 'benhc'; the commands: bench, study")


def test_a_python_without_the_suites_dependencies_is_one_error_line(monkeypatch, capsys):
    """Hostile round: BARE=1 without the wheels on PYTHONPATH ended in a ModuleNotFoundError traceback."""
    def missing(name: str):
        raise ModuleNotFoundError("No module named 'hydra.core'", name="hydra.core")

    monkeypatch.setattr(importlib, "import_module", missing)
    assert commands_main(["size"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: size: ") and "has no 'hydra': use the project's .venv" in err
    assert len(err.splitlines()) == 1
