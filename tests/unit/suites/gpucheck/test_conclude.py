"""Tests of ``suites/gpucheck/conclude.py``: how a gpu-check ends, every chosen check's row (what it found, or why it
did not start), the gpu-check run KILLED after an interrupt with nothing left RUNNING."""

from __future__ import annotations

import io
import time
from pathlib import Path

from rich.console import Console

from suites.campaign import execute
from suites.gpucheck import campaign, conclude
from suites.record.store_reader import StoreReader
from tests.support.checks_stood_in import gpu_check, stood_in


def test_an_interrupt_inside_a_check_leaves_nothing_running_and_the_gpu_check_killed(tmp_path: Path, monkeypatch):
    ran = stood_in(monkeypatch, raise_in="b1")
    gc = gpu_check(tmp_path, ["a", "b1", "b2"])
    t0 = time.monotonic()
    run = execute(campaign.campaign_of(gc, t0, 520), conclude.concluder(gc, t0), Console(file=io.StringIO()))
    assert ran == ["a", "b1"] and run.stopped.startswith("interrupted")
    store = StoreReader(f"sqlite:///{tmp_path / 'gc' / 'mlflow.db'}")
    parent = store.run(run.nest.parent.run_id)
    assert parent.status == "KILLED"
    children = {c.tags["bench.check_part"]: c.status for c in store.children(parent.run_id)}
    assert children == {"a": "FINISHED", "b1": "KILLED"}  # b1's run, adopted, ended: nothing left RUNNING
    # round 7: the check the interrupt stopped had no row (make rehearse then said "every check's judge holds")
    assert [r.check for r in conclude.rows_of(gc, run)] == ["a", "b1", "b2"]
    assert conclude.rows_of(gc, run)[1].result.startswith("skipped: not finished: interrupted")
    assert conclude.rows_of(gc, run)[2].result.startswith("skipped: interrupted")
