"""Tests of ``suites/sizing/report.py``: ranges as safe..point, a predicted end labelled, the measured
steps, and the report's files."""

from __future__ import annotations

from pathlib import Path

from suites.capacity import curve, solver
from suites.capacity.curve import GuestCount, Limit, Tile
from suites.capacity.result import SizingResult
from suites.sizing.report import counts_measured, span, write

LIMITS = [Limit("ml_slowdown_pct", 15.0)]


def sparse() -> curve.Capacity:
    """Measured at 1, 2, 4 and 8 guests: the ML slowdown 2, 5, 10, 30 % (limit 15 %): 5 predicted on the medians."""
    ml = {1: 2.0, 2: 5.0, 4: 10.0, 8: 30.0}
    return curve.capacity([GuestCount(n, tuple(Tile({"ml_slowdown_pct": m + d}) for d in (-0.5, 0.0, 0.5)))
                           for n, m in ml.items()], LIMITS)


def test_a_range_reads_safe_to_point_and_says_which_end_is_predicted():
    assert span((5, 4)) == "4..5" and span((3, 3)) == "3" and span((None, None)) == "-"
    assert span((5, 4), predicted=(True, False)) == "4..5 (predicted)"
    assert span((5, 5), predicted=(True, True)) == "5 (predicted)"
    assert span((6, None), predicted=(True, False)) == "-..6 (predicted)"


def test_the_measured_steps_are_a_span_where_every_count_was_run_else_listed():
    assert counts_measured(sparse()) == "1, 2, 4, 8"
    dense = curve.capacity([GuestCount(n, (Tile({"ml_slowdown_pct": 1.0}),)) for n in (1, 2, 3)], LIMITS)
    assert counts_measured(dense) == "1..3"


def test_the_report_labels_a_predicted_capacity_everywhere_it_is_shown(tmp_path: Path):
    cap = sparse()
    cand = solver.Candidate("m60-1q", "Tesla M60", 1024, 8, 1, 4096, cap)
    answer = solver.solve([cand], solver.Mix(20, 2), solver.Demand(float("nan"), float("nan")),
                          solver.Host(4, None, None))
    result = SizingResult(solver.Mix(20, 2), "Tesla M60", {"ml_slowdown_pct": 15.0}, {"m60-1q": cap}, answer,
                          {"m60-1q": "not enforced"}, {"GPU": "no GPU"})
    files = write(result, tmp_path)
    assert [f.name for f in files] == ["sizing.md", "sizing.html", "density.csv", "sizing.png"]
    assert all(f.stat().st_size for f in files)
    md = (tmp_path / "sizing.md").read_text()
    assert "| m60-1q * | 1, 2, 4, 8 | 4..5 (predicted) |" in md  # measured steps, N safe..point
    assert "(predicted): interpolated between two measured counts, not measured" in md
    assert "GPU time: 5 (point) predicted: interpolated between the measured counts 4 and 8" in md


def test_a_knee_past_the_qos_limit_is_said_to_be_past_it():
    from suites.sizing.report import knee_of
    from tests.support.curves import step

    limits = [Limit("cad_slowdown_pct", 5.0)]
    bend = {1: 6.0, 2: 7.0, 3: 20.0}  # misses at 1 (N point 0); the curve bends at 2
    cap = curve.capacity([step(n, [c] * 3, [1.0] * 3, [1.0] * 3) for n, c in bend.items()], limits)
    assert cap.n_point == 0 and cap.knee == 2 and knee_of(cap) == "2 (past QoS)"
    fine = curve.capacity([step(n, [c / 10] * 3, [1.0] * 3, [1.0] * 3) for n, c in bend.items()], limits)
    assert fine.knee == 2 and knee_of(fine) == "2"
