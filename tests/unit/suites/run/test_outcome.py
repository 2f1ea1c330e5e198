"""Tests of ``suites/run/outcome.py``."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from gpu_probe.stats import covered_fraction
from suites.guest.protocol import GuestResult
from suites.run.outcome import GuestOutcome, overlaps


# --- overlap -------------------------------------------------------------------------------------------------------
def guest(gid: str, window: tuple[float, float], active: tuple[float, float], workload: str = "mnist-torch"):
    result = GuestResult(gid, "ok", t_train_start=active[0], t_train_end=active[1], windows=[window])
    spec = type("Spec", (), {"guest_id": gid, "workload": workload})()
    return GuestOutcome(spec=spec, placement=None, result=result, log_path=Path("/dev/null"))  # type: ignore


def test_a_pair_overlaps_as_much_as_each_window_had_the_other_at_work():
    assert covered_fraction((0.0, 10.0), (5.0, 20.0)) == 0.5 and math.isnan(covered_fraction((1.0, 1.0), (0, 2)))
    assert covered_fraction((0.0, 10.0), (0.0, 3.0), (2.0, 4.0), (8.0, 12.0)) == 0.6  # a union, counted once
    cad = guest("g0", (1.0, 11.0), (0.0, 11.0), "graphics-replay")
    ml = guest("g1", (2.0, 11.2), (0.0, 11.2))  # trained until the CAD replay ended (one step past it)
    assert overlaps([cad, ml])["overlap_pct"] == pytest.approx(100 * 9.0 / 9.2)
    assert overlaps([cad, ml])["overlap_pct.g0.g1"] == pytest.approx(100 * 9.0 / 9.2)
    short = guest("g1", (0.5, 0.6), (0.0, 0.6))  # a 0.1 s ML run beside a 10 s replay: within it, but it apart
    assert overlaps([cad, short])["overlap_pct"] == 0.0
    assert overlaps([cad]) == {}


def test_a_consolidation_step_is_beside_each_other_while_some_cad_guest_replays():
    # two CAD replays of different lengths, the ML guest open-ended until the last ends: the CAD pair overlaps
    # little (one finished first), yet every window had a guest of the other workload at work all along
    cads = [guest("g0", (0.1, 6.0), (0.0, 6.0), "graphics-replay"), guest("g1", (0.1, 10.0), (0.0, 10.0),
                                                                           "graphics-replay")]
    ml = guest("g2", (0.5, 10.1), (0.0, 10.1))
    got = overlaps([*cads, ml])
    assert got["overlap_pct.g0.g1"] == pytest.approx(100 * 5.9 / 9.9) and got["overlap_pct.g1.g2"] > 90
    assert got["overlap_pct"] == pytest.approx(100 * 9.5 / 9.6)  # the ML window's last 0.1 s had no replay


# --- a missed target is never a silent ok ------------------------------------------------------------------------
def test_a_missed_target_is_said_in_the_cell_and_a_note():
    from types import SimpleNamespace

    from suites.render.tables import result_notes, target_mark
    from suites.run.outcome import missed_target

    m = {"test_accuracy": 0.289, "target_accuracy": 0.99, "target_met": 0.0}
    assert target_mark("test_accuracy", m) == " < 99%" and target_mark("images_per_sec", m) == ""
    assert missed_target(m) == "test accuracy 28.90% < target 99%"
    assert missed_target({**m, "test_accuracy": 0.995, "target_met": 1.0}) == ""
    # over repeats, one repeat that missed is a miss (an olympic mean of 1, 1, 0 reads 1)
    assert missed_target({**m, "target_met": 1.0, "target_met.min": 0.0, "test_accuracy.min": 0.5})
    guest = SimpleNamespace(spec=SimpleNamespace(guest_id="g0"),
                            result=SimpleNamespace(metrics=m, info={}, ok=True))
    notes = result_notes(SimpleNamespace(guests=[guest]))
    assert notes == ["note: g0: missed its target: test accuracy 28.90% < target 99% (strict=true makes this a "
                     "failure)"]
