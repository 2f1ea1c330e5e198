"""An MPS control daemon stand-in on PATH (``standin``): it creates and removes the control pipe the way the real
one does, in a short folder (``short_dir``: Unix socket paths must fit 107 bytes)."""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
from pathlib import Path

import pytest

STANDIN = """#!/usr/bin/env python3
import json, os, pathlib, socket, sys
pipe = pathlib.Path(os.environ["CUDA_MPS_PIPE_DIRECTORY"])
entry = {"argv": sys.argv[1:], "pipe": str(pipe), "log": os.environ.get("CUDA_MPS_LOG_DIRECTORY")}
if "-d" not in sys.argv[1:]:
    entry["stdin"] = sys.stdin.read()
with open(os.environ["MPS_STANDIN_LOG"], "a") as f:
    f.write(json.dumps(entry) + "\\n")
if os.environ.get("MPS_STANDIN_FAIL"):
    print("An instance of this daemon is already running", file=sys.stderr)
    sys.exit(1)
if "-d" in sys.argv[1:]:  # the daemon: listens on pipe/control, apart from its caller, until told quit
    pipe.mkdir(parents=True, exist_ok=True)
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(pipe / "control"))
    server.listen()
    server.settimeout(600)  # a stand-in a failed test never told quit ends by itself
    if os.fork():
        os._exit(0)
    os.setsid()
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)  # the caller's pipes closed: it is not kept waiting
    while True:
        conn = server.accept()[0]
        told = conn.recv(4096)
        conn.close()
        if b"quit" in told:
            os._exit(0)  # the socket file stays behind, as the real daemon's does
else:
    client = socket.socket(socket.AF_UNIX)
    client.connect(str(pipe / "control"))
    client.sendall(entry["stdin"].encode())
    client.close()
"""


@pytest.fixture
def standin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The stand-in control program first on PATH; returns the file its calls are logged to."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    exe = bin_dir / "nvidia-cuda-mps-control"
    exe.write_text(STANDIN)
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    log = tmp_path / "mps-calls.jsonl"
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    monkeypatch.setenv("MPS_STANDIN_LOG", str(log))
    return log


@pytest.fixture
def short_dir() -> Path:
    """A run directory short enough for the daemon's sockets to live under it (pytest's own can be too deep, e.g.
    under a test process's popen-gwN folder, and then the daemon's pipes go to a temp folder: right, but not what
    these tests look at)."""
    folder = Path(tempfile.mkdtemp(prefix="mps-", dir="/tmp"))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)
