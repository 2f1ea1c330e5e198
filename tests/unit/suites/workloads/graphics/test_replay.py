"""Tests of ``suites/workloads/graphics/replay.py``."""

from __future__ import annotations

import math

import pytest

from suites.workloads.graphics.replay import composite, frame_stats


# --- scores -----------------------------------------------------------------------------------
def test_composite_is_a_weighted_geometric_mean():
    assert composite([(1, 10.0), (1, 40.0)]) == pytest.approx(20.0)
    assert composite([(3, 10.0), (1, 10.0 * 2**4)]) == pytest.approx(20.0)
    assert math.isnan(composite([(1, 10.0), (1, 0.0)])) and math.isnan(composite([]))


def test_frame_stats_are_percentiles_of_frame_times():
    stats = frame_stats([0.010] * 18 + [0.100, 0.200], [], "vs")
    assert stats["vs.frames"] == 20 and stats["vs.fps"] == pytest.approx(20 / 0.48)
    assert stats["vs.frame_time_ms.p50"] == pytest.approx(10.0)
    # linear interpolation between the 19th and 20th of 20 sorted frames (100 and 200 ms)
    assert stats["vs.frame_time_ms.p95"] == pytest.approx(105.0)
    assert stats["vs.frame_time_ms.p99"] == pytest.approx(181.0)
    assert stats["vs.stutter_pct"] == pytest.approx(10.0)  # 2 of 20 frames over twice the 10 ms median
    assert frame_stats([0.010] * 10 + [0.0199], [], "vs")["vs.stutter_pct"] == 0.0  # under twice: no hitch
