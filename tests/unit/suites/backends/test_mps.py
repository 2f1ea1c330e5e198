"""Tests of ``suites/backends/mps.py``."""

from __future__ import annotations

from pathlib import Path

import pytest

from suites.backends.mps import MpsDaemon, MpsError, daemon_running
from suites.errors import ConfigError


def test_a_socket_left_by_a_daemon_that_quit_is_not_a_running_daemon(short_dir: Path):
    """The real daemon leaves its control socket behind when it quits (an H200, driver 580): only a socket that
    accepts a connection is a daemon; a file named control is not either."""
    import socket

    pipe = short_dir / "pipe"
    pipe.mkdir()
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(pipe / "control"))
    server.listen()
    assert daemon_running(pipe)
    server.close()
    assert (pipe / "control").exists() and not daemon_running(pipe)
    (pipe / "control").unlink()
    (pipe / "control").touch()
    assert not daemon_running(pipe) and not daemon_running(short_dir / "nothing-here")


def test_a_daemon_that_does_not_start_is_one_line_and_leaves_nothing(tmp_path: Path, standin: Path,
                                                                     monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("MPS_STANDIN_FAIL", "1")
    with pytest.raises(MpsError, match="did not start .*exited 1: An instance of this daemon is already running"):
        MpsDaemon(tmp_path / "run" / "mps").start()
    assert not (tmp_path / "run" / "mps").exists()


def test_no_control_program_is_one_config_error_before_anything(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # nothing on it
    with pytest.raises(ConfigError, match="sharing=mps: nvidia-cuda-mps-control is not on PATH"):
        MpsDaemon(tmp_path / "mps").start()
    assert not (tmp_path / "mps").exists()
