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
