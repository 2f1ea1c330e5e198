"""Tests of ``suites/render/mixed_plots.py``."""

from __future__ import annotations

from pathlib import Path

import pytest

from suites.render import mixed_plots
from tests.support.outcomes import check, study


@pytest.mark.heavy
def test_study_figures_fit_and_consolidation_series_are_apart(tmp_path: Path, drawn: list):
    files = mixed_plots.draw(study(), tmp_path)
    assert [f.name for f in files] == ["slowdown.png", "sequential_vs_concurrent.png", "cpu_utilisation.png",
                                       "consolidation.png"]
    for fig, path in zip(drawn, files, strict=True):
        check(fig, path)
    consolidation = drawn[-1]
    lines = [(ax, line) for ax in consolidation.axes for line in ax.get_lines() if not line.get_label().startswith(
        ("_", "QoS"))]
    (ax1, _), (ax2, _) = lines
    assert not ax1.get_position().overlaps(ax2.get_position()), "p95 frame time and ML slowdown on one panel"


@pytest.mark.heavy
def test_every_figure_of_a_busy_hosts_report_says_so_beside_not_a_gpu(tmp_path: Path, drawn: list):
    from suites.run.marks import Mark

    rep = study()
    rep.marks = {"mixed": [Mark("host busy in 1 of 3 phase(s) (other processes up to 120 % of a core > "
                                "host_busy_pct=25)", True)]}
    mixed_plots.draw(rep, tmp_path)
    for fig in drawn:
        title = " ".join(fig._suptitle.get_text().split())
        assert "NOT a GPU measurement" in title and "HOST BUSY: host busy in 1 of 3 phase(s)" in title


@pytest.mark.heavy
def test_an_interval_far_wider_than_the_bars_is_cut_and_said_not_the_bars_flattened(tmp_path: Path, drawn: list):
    """Round 7: the slowdown plot's axis ran to one interval's upper bound (17,500 %), flattening both bars."""
    rep = study()
    first = next(iter(rep.mixed))
    rep.mixed[first]["ml_train_time_increase_pct.ci_high"] = 17_500.0
    mixed_plots.draw(rep, tmp_path)
    ax = drawn[0].axes[0]
    tallest = max(abs(v) for p in rep.mixed.values() for k, v in p.items()
                  if k in ("cad_run_time_increase_pct", "ml_train_time_increase_pct") and v == v)
    assert ax.get_ylim()[1] <= max(tallest * mixed_plots.WIDEST, 10.0) + 1e-9
    assert any("is cut" in t.get_text() for t in ax.texts)
