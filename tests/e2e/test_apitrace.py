"""apitrace adapter: a trace the test records of the suite's own replayer, replayed by eglretrace."""

from __future__ import annotations

from pathlib import Path

import pytest

from suites.workloads.graphics import apitrace
from suites.workloads.graphics.frametrace import TraceFormatError
from tests.support.helpers import run_bench


@pytest.fixture(scope="module")
def self_trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("apitrace") / "self.trace"
    return apitrace.record_replayer(out, ["product"], frames=4)  # 2 tests x 4 frames


BROKEN = {  # scenario: (how the file is made from a good trace, what the one line says)
    "truncated": (lambda good: good[: len(good) // 3], "is truncated"),
    "random-bytes": (lambda good: bytes(range(256)) * 4, "is not a readable apitrace trace"),
    "empty": (lambda good: b"", "is empty"),
}


def test_recorded_trace_has_one_frame_per_replayed_frame(self_trace: Path):
    doc = apitrace.info(self_trace)
    assert doc["FramesCount"] == 8 and "EGL" in doc["API"]


def test_eglretrace_replays_it_and_the_bench_reports_frames(tmp_path: Path, self_trace: Path):
    run = run_bench(tmp_path, "workload=apitrace-replay", f"workload.trace={self_trace}", "workload.loops=2",
                    "progress=quiet")
    assert run.proc.returncode == 0, run.proc.stderr[-2000:]
    m = run.results["guests"][0]["result"]["metrics"]
    assert m["frames"] == 16 and m["self.frames"] == 16  # 8 frames, 2 timed loops
    assert m["fps"] == pytest.approx(16 / m["run_time_s"]) and m["fps"] > 0
    assert 0 < m["cpu_frame_time_ms.p50"] <= m["cpu_frame_time_ms.p95"] <= m["cpu_frame_time_ms.p99"]
    assert "gpu_frame_time_ms.p50" not in m or "llvmpipe" not in run.results["guests"][0]["result"]["info"]["renderer"]
    assert "│ self" in run.proc.stdout and "eglretrace CPU time per frame" in run.proc.stdout


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_broken_trace_is_one_line_before_any_guest(tmp_path: Path, self_trace: Path, name: str):
    make, expected = BROKEN[name]
    bad = tmp_path / f"{name}.trace"
    bad.write_bytes(make(self_trace.read_bytes()))
    with pytest.raises(TraceFormatError, match=expected):
        apitrace.info(bad)
    run = run_bench(tmp_path, "workload=apitrace-replay", f"workload.trace={bad}")
    lines = [ln for ln in run.proc.stderr.splitlines() if ln.strip()]
    assert run.proc.returncode == 2 and len(lines) == 1 and expected in lines[0], run.proc.stderr
    assert not list(run.run_dir.glob("g*.log"))
