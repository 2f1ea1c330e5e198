"""Tests of ``gpu_probe/hostload.py``."""

from __future__ import annotations

import math

import pytest


def test_a_span_too_short_for_procs_clock_ticks_gives_no_host_load_and_the_next_read_covers_it(
        monkeypatch: pytest.MonkeyPatch):
    """/proc/stat counts 10 ms ticks: 2 ticks on a 3 ms span read as 658 % of a core (an H200's first row)."""
    from collections import namedtuple

    from gpu_probe import hostload

    Times = namedtuple("Times", "user system idle steal")
    clock = {"t": 100.0, "cpu": Times(0.0, 0.0, 0.0, 0.0)}
    monkeypatch.setattr(hostload.time, "monotonic", lambda: clock["t"])
    monkeypatch.setattr(hostload.psutil, "cpu_times", lambda: clock["cpu"])
    cpu = hostload.CpuClock()
    clock.update(t=100.003, cpu=Times(0.02, 0.0, 0.0, 0.0))  # two ticks in 3 ms
    busy, steal = cpu.read()
    assert math.isnan(busy) and math.isnan(steal)
    clock.update(t=100.103, cpu=Times(0.03, 0.0, 0.07, 0.0))  # 30 ms of CPU since the clock started, 103 ms ago
    busy, steal = cpu.read()
    assert busy == pytest.approx(100 * 0.03 / 0.103) and steal == 0.0
