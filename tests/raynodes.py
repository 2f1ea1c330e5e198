"""Ray nodes for the tests, started with the real `ray start` on loopback and stopped without a trace."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .conftest import stop_group

RAY = Path(sys.executable).with_name("ray")
# Ray otherwise rewrites 127.0.0.1 to the host's LAN address; with this it stays a loopback-only cluster.
LOOPBACK_ENV = {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"}
# No token auth, even where ~/.ray/auth_token exists (Ray turns it on for whoever finds that file; a cluster
# started before it appeared then refuses them).
NO_AUTH = {"RAY_AUTH_MODE": "disabled"}
NODE_FLAGS = ["--block", "--disable-usage-stats"]


def start_node(args: list[str], log: Path, wrap: list[str] | None = None, env: dict[str, str] | None = None,
               started: str = "Ray runtime started") -> subprocess.Popen:
    """``ray start <args> --block`` in its own process group (``wrap``: a command line it runs under, e.g. a
    network or mount namespace; ``env``: instead of the single-node loopback setting); returns once it is up."""
    out = log.open("w")
    proc = subprocess.Popen([*(wrap or []), str(RAY), "start", *NODE_FLAGS, *args], stdout=out,
                            stderr=subprocess.STDOUT, start_new_session=True,
                            env={**os.environ, **(LOOPBACK_ENV if env is None else env), **NO_AUTH})
    out.close()  # the child holds its own copy
    deadline = time.monotonic() + 120
    while started not in log.read_text():
        if proc.poll() is not None or time.monotonic() > deadline:
            stop_node(proc)
            pytest.fail(f"ray start {' '.join(args[:2])} failed: " + log.read_text()[-1500:])
        time.sleep(0.5)
    return proc


def stop_node(proc: subprocess.Popen) -> None:
    """The node's whole process group (raylet, GCS, workers share it)."""
    stop_group(proc)
