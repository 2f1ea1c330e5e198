"""Tests of ``suites/backends/ray/agent.py``."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpu_probe.remote import node_columns
from gpu_probe.stats import clock_offset
from suites.backends.ray.agent import RemotePipe


def test_a_node_row_becomes_the_guest_columns_and_its_interval_the_runner_clock(tmp_path: Path):
    row = {"t_s": 1.0, "host_cpu_pct": 80.0, "g0.cpu_pct": 99.0, "gpu0.util_pct": 55.0, "g0.gpu_mem_MiB": 512.0}
    assert node_columns(row, "g0") == {"g0.gpu0.util_pct": 55.0, "g0.gpu_mem_MiB": 512.0}
    pipe = RemotePipe(None, tmp_path / "g0.log")
    pipe.offset = clock_offset([(0.0, 7.0, 0.002)] * 5)  # node 7 s ahead
    ev = {"event": "result", "result": {"guest_id": "g0", "status": "ok", "t_train_start": 107.5,
                                        "t_train_end": 117.5}}
    fixed = pipe.on_this_clock(ev)["result"]
    assert fixed["t_train_start"] == pytest.approx(100.501) and fixed["t_train_end"] == pytest.approx(110.501)
    assert ev["result"]["t_train_start"] == 107.5  # the event as received is left as it was
