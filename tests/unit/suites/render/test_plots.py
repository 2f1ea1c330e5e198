"""Tests of ``suites/render/plots.py``."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from gpu_probe.stats import confidence_interval
from suites.record.sweep_points import SweepRow
from suites.render import plots
from suites.validity import NOT_ENFORCED
from tests.support.outcomes import LONG, check, outcome, phases


@pytest.mark.heavy
def test_utilisation_and_comparison_fit_their_figures(tmp_path: Path, drawn: list):
    plots.utilisation(outcome(), tmp_path / "utilisation.png")
    plots.comparison(phases(), tmp_path / "comparison.png", "scaling: cifar10-torch over 1, 2 and 4 GPUs " + LONG)
    for fig, name in zip(drawn, ("utilisation.png", "comparison.png"), strict=True):
        check(fig, tmp_path / name)
    gpu_panel = drawn[0].axes[-1]
    assert [ln.get_label() for ln in gpu_panel.get_lines()] == ["GPU 0", "g1: its node's GPU 0"]


def test_sweep_figure_fits(tmp_path: Path, drawn: list):
    rows = [SweepRow(str(i), f"m60-{q}q", "cifar10-torch", "ok", NOT_ENFORCED,
                     confidence_interval([900.0 + i, 950.0, 1000.0 - i]), math.nan, f"/runs/{i}")
            for i, q in enumerate((8, 4, 2, 1))]
    plots.sweep(rows, tmp_path / "sweep_summary.png", "sweep: 4 job(s) in 2026-11-24/10-00-00 " + LONG)
    check(drawn[0], tmp_path / "sweep_summary.png")


def test_the_comparison_plot_says_ci_only_where_it_draws_one_and_marks_a_busy_host(tmp_path: Path, drawn: list):
    import dataclasses

    rows = phases()
    plots.comparison(rows, tmp_path / "a.png", "scaling")
    assert drawn[0].axes[0].get_ylabel() == "x baseline (95 % CI)"
    one = [dataclasses.replace(r, n=1, throughput_x_ci_low=math.nan, throughput_x_ci_high=math.nan,
                               host_busy="host busy (other processes 120 % of a core)") for r in rows]
    plots.comparison(one, tmp_path / "b.png", "scaling")
    assert drawn[1].axes[0].get_ylabel() == "x baseline (one repeat: no CI drawn)"
    assert "HOST BUSY (host busy (other processes 120 % of a core)): no verdict" in drawn[1]._suptitle.get_text()\
        .replace("\n", " ")


def test_the_utilisation_figure_marks_a_busy_host_and_a_cpu_run(tmp_path: Path, drawn: list):
    busy = outcome()
    busy.host_busy = "host busy (other processes 120 % of a core)"
    plots.utilisation(busy, tmp_path / "u.png")
    title = " ".join(drawn[0]._suptitle.get_text().split())
    assert "HOST BUSY (host busy (other processes 120 % of a core))" in title
    assert ("NOT a GPU measurement" in title) == busy.validity.startswith("not enforced")
