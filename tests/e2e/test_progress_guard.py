"""The tests' progress guard (tests/support/progress.py): a hung command is killed, a slow one is waited for."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

from tests.support import progress

SLEEPS = "import time; time.sleep(30)"  # waits on nothing, spends nothing: hung
SPINS = "import time; t = time.monotonic()\nwhile time.monotonic() - t < 3: pass\nprint('done')"  # silent, working
WRITES = "import sys, time, pathlib\nfor i in range(3):\n    pathlib.Path(sys.argv[1], str(i)).write_text('x')\n" \
         "    time.sleep(2)\nprint('done')"  # a file every 2 s, silent and idle between


def test_a_command_that_waits_on_nothing_is_killed_after_its_stall_time():
    t0 = time.monotonic()
    with pytest.raises(progress.Stalled, match="no output, file or CPU time for"):
        progress.run([sys.executable, "-c", SLEEPS], stall_s=1.5)
    assert time.monotonic() - t0 < 20


def test_a_silent_command_that_spends_cpu_is_waited_for():
    done = progress.run([sys.executable, "-c", SPINS], stall_s=1.5)
    assert done.returncode == 0 and done.stdout == "done\n"


def test_a_command_writing_files_under_a_watched_folder_is_waited_for(tmp_path: Path):
    done = progress.run([sys.executable, "-c", WRITES, str(tmp_path)], stall_s=3, watch=(tmp_path,))
    assert done.returncode == 0 and len(list(tmp_path.iterdir())) == 3
    (tmp_path / "x").mkdir()
    with pytest.raises(progress.Stalled):  # the same, unwatched: no progress seen
        progress.run([sys.executable, "-c", WRITES, str(tmp_path / "x")], stall_s=3)


def test_the_last_bound_holds_whatever_the_progress():
    with pytest.raises(progress.Stalled, match="s in all"):
        progress.run([sys.executable, "-c", SPINS], stall_s=60, limit_s=1)
