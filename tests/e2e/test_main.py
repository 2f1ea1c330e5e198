"""``python -m suites`` lists its commands and runs one (suites/__main__.py, suites/commands/__init__.py)."""

from __future__ import annotations

import subprocess
import sys

from suites.commands import COMMANDS
from tests.support.helpers import REPO


def test_python_m_suites_lists_the_commands_and_runs_one():
    helped = subprocess.run([sys.executable, "-m", "suites", "--help"], cwd=REPO, capture_output=True, text=True,
                            timeout=60)
    assert helped.returncode == 0 and all(f"  {name} " in helped.stdout for name in COMMANDS), helped.stdout
    sync = subprocess.run([sys.executable, "-m", "suites", "sync", "--help"], cwd=REPO, capture_output=True,
                          text=True, timeout=60)
    assert sync.returncode == 0 and sync.stdout.startswith("usage: python -m suites sync"), sync.stdout
