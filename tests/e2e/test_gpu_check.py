"""``make gpu-check`` refuses where it cannot write, before any check."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.helpers import REPO, one_error_line


@pytest.mark.parametrize("arg,says", [("out_dir=/proc/x", "out_dir: /proc/x/"), ("budget_s=nan", "got nan"),
                                      ("budget_s=-5", "got -5.0"), ("out_dir=configs", "source tree"),
                                      ("started_at=1", "budget_s=540 from it is spent before any check")])
def test_gpu_check_refuses_where_it_cannot_write_before_any_check(tmp_path: Path, arg: str, says: str):
    proc = subprocess.run([sys.executable, "-m", "suites.gpucheck.command", arg], cwd=REPO, capture_output=True,
                          text=True, timeout=120)
    assert says in one_error_line(proc)


def test_a_rehearsals_check_that_runs_out_of_time_beside_other_load_is_inconclusive_not_failed(tmp_path: Path):
    """Round 7: beside two other runs, a rehearsal's k (make size) was 'failed: did not finish within 208 s', a failure
    the device would not have. A rehearsal is judged on the device's work: on a busy host the late check is said to be
    the host's. A burner outside this process tree (double-forked) is the other load."""
    import os
    import signal
    import subprocess
    import sys

    from gpu_probe.inventory import Inventory
    from suites.gpucheck import checks as gpu_checks

    spawn = ("import subprocess, sys; p = subprocess.Popen([sys.executable, '-c', 'while True: pass'], "
             "start_new_session=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, "
             "stderr=subprocess.DEVNULL); print(p.pid)")  # its output not ours: run() returns once it is spawned
    burner = int(subprocess.run([sys.executable, "-c", spawn], capture_output=True, text=True, check=True).stdout)
    try:
        inv = Inventory("h", "linux", "3.11", "cpu", 2, 2, 2, 24000.0)
        ctx = gpu_checks.Context(tmp_path, inv, None, deadline=1e12, say=lambda s: None,
                                 stand_in=object())  # type: ignore[arg-type]  # a rehearsal: any stand-in
        row = gpu_checks.run_check(ctx, "h", lambda: gpu_checks.run_logged(ctx, "h-study", ["sleep", "60"], 10)
                                   and None)
    finally:
        os.kill(burner, signal.SIGKILL)
    assert row.result.startswith("inconclusive: host busy (other processes: "), row.result
    assert "did not finish within 10 s on this host" in row.result


def test_budget_s_counts_from_the_device_calls_start_its_set_up_included(tmp_path: Path):
    """A device call's set-up (its wheels, prepare's data) ran before gpu-check: started_at= makes budget_s count from
    the call's start, so its summary's seconds hold that set-up too (here, no GPU: every check skipped in a second)."""
    import json
    import time

    proc = subprocess.run([sys.executable, "-m", "suites.gpucheck.command", f"started_at={time.time() - 100:.3f}",
                           f"out_dir={tmp_path}"], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(next(tmp_path.glob("*/summary.json")).read_text())
    assert 100 <= summary["elapsed_s"] < 160, summary["elapsed_s"]
