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
