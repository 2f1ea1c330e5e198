"""Tests of ``suites/render/sizing_plots.py``: one panel per limited QoS metric with its own limit inside the
axes, steps coloured by meeting or missing it, and an inconclusive sizing's steps in their own colour."""

from __future__ import annotations

from pathlib import Path

from suites.capacity import curve, solver
from suites.capacity.curve import Limit
from suites.capacity.result import SizingResult
from suites.render import sizing_plots
from tests.support.curves import step

LIMITS = {"cad_slowdown_pct": 5.0, "ml_slowdown_pct": 15.0, "cad_p95_frame_ms": 100.0}


def result(doubt: str) -> SizingResult:
    # p95 from 125 ms: an axis from the data alone would leave the 100 ms limit off it
    cap = curve.capacity([step(n, [1.0 * n] * 3, [2.0 * n] * 3, [125.0 + n] * 3) for n in (1, 2, 3)],
                         [Limit(k, v) for k, v in LIMITS.items()])
    c = solver.Candidate("m60-1q", "Tesla M60", 1024, 8, 2, 4096, cap, inconclusive=doubt)
    answer = solver.solve([c], solver.Mix(20, 2), solver.Demand(float("nan"), float("nan")),
                          solver.Host(4, None, None))
    return SizingResult(solver.Mix(20, 2), "Tesla M60", LIMITS, {"m60-1q": cap}, answer, {"m60-1q": "not enforced"},
                        {"GPU": "no GPU"}, answers={"medium": answer})


def drawn(monkeypatch, res: SizingResult, tmp_path: Path):
    figs = []
    monkeypatch.setattr(sizing_plots, "save", lambda fig, path, title, validity: figs.append(fig) or path)
    sizing_plots.draw(res, tmp_path)
    return figs[0]


def test_each_qos_metric_has_its_panel_with_its_limit_inside_the_axes(monkeypatch, tmp_path: Path):
    fig = drawn(monkeypatch, result(""), tmp_path)
    axes = fig.axes
    assert [ax.get_title() for ax in axes] == ["cad_slowdown_pct (limit 5)", "ml_slowdown_pct (limit 15)",
                                               "cad_p95_frame_ms (limit 100)"]
    for ax, limit in zip(axes, LIMITS.values(), strict=True):
        low, high = ax.get_ylim()
        assert low <= limit <= high
    colours = [tuple(c) for c in axes[2].collections[-1].get_facecolors()]
    assert len(set(colours)) == 1  # every p95 step misses its limit: one colour, red
    labels = [t.get_text() for t in axes[0].get_legend().get_texts()]
    assert "misses it" in labels and "inconclusive (measured on noise)" not in labels


def test_an_inconclusive_sizing_marks_its_steps_in_their_own_colour_and_legend(monkeypatch, tmp_path: Path):
    fig = drawn(monkeypatch, result("inconclusive: host busy; to size: size again"), tmp_path)
    labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert "inconclusive (measured on noise)" in labels and "misses it" not in labels
    from matplotlib.colors import to_rgba

    assert {tuple(c) for c in fig.axes[0].collections[-1].get_facecolors()} == {to_rgba(sizing_plots.INCONCLUSIVE)}
