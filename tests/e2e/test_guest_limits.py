"""A guest over its limits is stopped with the reason: memory during set-up (before the barrier), time past the
run's limit."""

from __future__ import annotations

from pathlib import Path

from tests.support.cifar_files import bench_run
from tests.support.helpers import SMOKE


def test_a_guest_over_its_memory_during_set_up_is_stopped_before_the_barrier(tmp_path: Path):
    import json

    proc = bench_run(tmp_path, *SMOKE, "profile.memory_MiB=300", timeout=300)  # importing torch alone takes more
    assert proc.returncode == 1, proc.stderr[-2000:]
    result = json.loads((tmp_path / "run" / "results.json").read_text())["guests"][0]["result"]
    assert result["status"] == "failed" and "guest memory exceeded during set-up: RSS" in result["error"]
    assert result["t_train_start"] is None  # stopped before it was released, not after


def test_a_guest_past_the_time_limit_is_killed_with_that_reason(tmp_path: Path):
    """The time limit, seen on a silent guest (nothing else would end it for 600 s)."""
    import json

    proc = bench_run(tmp_path, "workload=idle", *SMOKE, "workload.seconds=600", "scenario.timeout_s=2", timeout=120)
    assert proc.returncode == 1, proc.stderr[-2000:]
    result = json.loads((tmp_path / "run" / "results.json").read_text())["guests"][0]["result"]
    assert result["status"] == "failed" and result["error"] == "timed out after scenario.timeout_s=2 s"
