"""Tests of ``suites/commands/__init__.py``."""

from __future__ import annotations

import importlib
import os

import pytest

from suites.commands import COMMANDS, usage
from suites.commands import main as commands_main


@pytest.fixture(autouse=True)
def own_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """main() sets the telemetry switch in its process's environment: here, in a copy, so no later test in this
    worker sees it (make -n ui's line would differ)."""
    monkeypatch.setattr(os, "environ", dict(os.environ))


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


@pytest.mark.parametrize("given, seen", [({}, ("true", None)),  # nobody asked: off before the command's imports
                                         ({"MLFLOW_DISABLE_TELEMETRY": "false"}, ("false", None)),  # theirs stands
                                         ({"DO_NOT_TRACK": "false"}, (None, "false"))])
def test_mlflow_telemetry_is_off_before_a_command_loads_unless_the_user_chose(monkeypatch, given: dict, seen: tuple):
    """MLflow decides at import whether its telemetry thread runs (and a user's run is not a CI job): the switch
    must be set before the command's module, which imports mlflow, is loaded; a switch the user set is theirs."""
    for name in ("MLFLOW_DISABLE_TELEMETRY", "DO_NOT_TRACK"):
        monkeypatch.delenv(name, raising=False)
    for name, value in given.items():
        monkeypatch.setenv(name, value)
    at_import: list[tuple] = []

    def loaded(name: str):
        at_import.append((os.environ.get("MLFLOW_DISABLE_TELEMETRY"), os.environ.get("DO_NOT_TRACK")))
        return type("Command", (), {"main": staticmethod(lambda rest: 0)})

    monkeypatch.setattr(importlib, "import_module", loaded)
    assert commands_main(["sync"]) == 0
    assert at_import == [seen]


def test_every_command_takes_sigterm_as_ctrl_c_and_a_second_press_changes_nothing(monkeypatch, capsys):
    """Round 7: compare and publish died silently on SIGTERM/SIGHUP (rc -15, -1: no handler of the suite's); two
    Ctrl-Cs gave rc -2. Through the dispatcher, a command the signal stops is one line and 130, and once it ends a
    further press is ignored."""
    import os
    import signal
    import time
    import types

    def stopped_by_sigterm(argv):
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(1)  # the handler runs here
        return 0

    monkeypatch.setattr(importlib, "import_module", lambda name: types.SimpleNamespace(main=stopped_by_sigterm))
    assert commands_main(["compare"]) == 130
    assert capsys.readouterr().err == "compare: interrupted (SIGTERM)\n"
    os.kill(os.getpid(), signal.SIGINT)  # a second press after the first ended it: nothing (the conftest restores)
    time.sleep(0.05)
    assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
