"""What a first run owes its user, end to end: a busy host is said, not hidden (a CPU burner beside a run marks every
figure, and strict=true refuses it); a missed target under strict=true is a failure, its figures kept."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from suites.render.tables import unfold
from tests.support.helpers import REPO, SMOKE, bench_args, cpu_burner, one_error_line, run_bench


@pytest.fixture
def burner() -> Iterator[None]:
    """A process that is not the run's, keeping one core busy (its own process group: stopped by the test); niced: what
    is tested is that the host is seen busy, not the run slowed."""
    with cpu_burner(1, niceness=19):
        yield


def test_a_run_beside_a_cpu_burner_is_marked_host_busy(tmp_path: Path, burner: None):
    run = run_bench(tmp_path, *SMOKE, "workload=idle", "workload.seconds=2", "host_busy_pct=25")
    assert run.proc.returncode == 0, run.proc.stderr[-2000:]
    assert "note: host busy before the run (other processes: " in run.proc.stderr
    results = run.results
    assert results["host_busy"].startswith("host busy (other processes: ") and "host_busy_pct=25" in\
        results["host_busy"]
    assert results["host_metrics"]["host_other_cpu_pct.mean"] > 25  # the sampler saw it during the run too
    said = unfold(run.proc.stdout)  # lines folded at 120 columns, read whole
    assert "HOST BUSY (other processes: " in said and "HOST_BUSY_PCT" not in said  # the setting's own name
    assert "no verdict is drawn from it" in said


def test_strict_refuses_a_busy_host_before_anything_starts(tmp_path: Path, burner: None):
    args, run_dir, _ = bench_args(tmp_path, *SMOKE, "host_busy_pct=25", "strict=true", "profile=cpu")
    proc = subprocess.run(args, cwd=REPO, capture_output=True, text=True, timeout=300)
    line = one_error_line(proc)
    assert line.startswith("error: host busy: other processes: ") and "strict=true refuses" in line
    assert not (run_dir / "results.json").exists()


def test_strict_makes_a_missed_target_a_failure_and_keeps_its_figures(tmp_path: Path):
    run = run_bench(tmp_path, *SMOKE, "profile=cpu", "strict=true", "workload.target_accuracy=0.999")
    assert run.proc.returncode == 1, run.proc.stderr[-2000:]
    guest = run.results["guests"][0]["result"]
    assert guest["status"] == "failed" and guest["error"].startswith("test accuracy ") and\
        guest["error"].endswith("< target 99.90% (strict=true)")
    assert guest["metrics"]["target_met"] == 0.0 and guest["metrics"]["test_accuracy"] < 0.999  # measured, kept
    assert "failure: g0: test accuracy " in run.proc.stdout
