"""Tests of ``suites/sizing/measured.py``: a consolidation's phases as curve steps (each repeat a tile beside the
baselines' repeat of its index), the measured peaks, a GPU's candidate profiles."""

from __future__ import annotations

import math

import pytest

from suites.run.phase_numbers import PhaseNumbers
from suites.sizing.measured import curve_of, demand


def phase(ml_rate: float, cad_s: float = math.nan, p95: float = 20.0, failed: tuple[str, ...] = ()) -> PhaseNumbers:
    """``cad_s``: the CAD guests' seconds per frame x 100 (a replay of 100 frames' run time)."""
    return PhaseNumbers(ml_images_per_sec=ml_rate, cad_run_time_s=cad_s, cad_frame_s=cad_s / 100,
                        cad_p95_frame_ms=[p95, p95 + 5],
                        cad_p99_frame_ms=[p95 + 9], cad_stutter_pct=[0.0, 2.5], ml_jitter_pct=3.0,
                        failed=len(failed), failed_guests=list(failed))


def test_each_repeat_is_a_tile_against_the_baselines_repeat_of_its_index():
    phases = {"m60-2q/ml": [phase(1000.0), phase(800.0)], "m60-2q/cad": [phase(math.nan, 10.0)],
              "m60-2q/n2": [phase(500.0, 12.0, 30.0), phase(400.0, 11.0, 35.0, ("g1",))],
              "m60-2q/n1": [phase(900.0, 10.5)]}
    one, two = curve_of(phases)
    assert (one.guests, two.guests) == (1, 2)  # read in guest order
    first, second = two.tiles
    assert first.metrics["ml_slowdown_pct"] == pytest.approx(100.0)  # 1000 alone, 500 beside: twice the time
    assert second.metrics["ml_slowdown_pct"] == pytest.approx(100.0)  # against ML alone's second repeat (800)
    assert second.metrics["cad_slowdown_pct"] == pytest.approx(10.0)  # the one CAD-alone repeat, reused
    assert first.metrics["cad_p95_frame_ms"] == 35.0 and first.metrics["cad_stutter_pct"] == 2.5  # the worst guest's
    assert second.failed == ("g1",) and first.failed == ()


def test_peaks_are_nan_without_a_gpu_and_the_largest_with_one():
    assert all(math.isnan(v) for v in demand([{"a/n1": [phase(1.0)]}]))
    held = {"a/n1": [PhaseNumbers(cad_gpu_mem_MiB=700.0, ml_gpu_mem_MiB=2100.0),
                     PhaseNumbers(cad_gpu_mem_MiB=900.0, ml_gpu_mem_MiB=math.nan)]}
    assert demand([held])[:2] == (900.0, 2100.0) and math.isnan(demand([held])[2])
    stated = {"a/n1": [PhaseNumbers(cad_stated_MiB=600.0), PhaseNumbers(cad_stated_MiB=1400.0)]}
    assert math.isnan(demand([stated])[0]) and demand([stated])[2] == 1400.0  # a statement, never a measured peak
