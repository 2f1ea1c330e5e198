"""``make gpu-check`` refuses where it cannot write, before any check."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.helpers import REPO, one_error_line


@pytest.mark.parametrize("arg,says", [("out_dir=/proc/x", "out_dir: /proc/x/"), ("budget_s=nan", "got nan"),
                                      ("budget_s=-5", "got -5.0"), ("out_dir=configs", "source tree")])
def test_gpu_check_refuses_where_it_cannot_write_before_any_check(tmp_path: Path, arg: str, says: str):
    proc = subprocess.run([sys.executable, "-m", "suites.gpucheck.command", arg], cwd=REPO, capture_output=True,
                          text=True, timeout=120)
    assert says in one_error_line(proc)
