"""Tests of ``suites/render/tables.py``."""

from __future__ import annotations

import pytest

from tests.support.meters import metered


def test_a_steady_rate_reconciles_with_images_over_train_time_through_the_warm_up():
    from suites.render.tables import rate_gap

    meter, out = metered([0.5] + [0.1] * 9 + [0.1] * 36, warmup=10)
    assert meter.blank_reason == "" and out["timed_steps"] == 36 and out["timed_s"] == pytest.approx(3.6)
    assert out["images_per_sec"] == pytest.approx(36 * 512 / 3.6)
    note = rate_gap(out)  # 5,120 steady vs 46 x 512 / 4.5 s = 5,234 overall: within 10 %, no note
    assert note == ""
    meter, out = metered([3.0] + [0.1] * 45, warmup=10)  # a slow first step (start-up) inside the warm-up
    note = rate_gap(out)
    assert "steady state over 36 timed steps (3.60 s)" in note and "warm-up took 3.90 s (52% of train s)" in note


def test_the_console_is_never_wider_than_120_columns(monkeypatch):
    from suites.render import tables

    monkeypatch.setenv("COLUMNS", "245")  # cfed7fc printed 245-column tables whatever COLUMNS said
    assert tables.console_width() == 120  # off a terminal (pytest captures stdout): a log's width
    monkeypatch.setattr(tables.sys.stdout, "isatty", lambda: True)
    assert tables.console_width() == 120
    monkeypatch.setenv("COLUMNS", "100")
    assert tables.console_width() == 100  # a narrower terminal is followed


def test_a_blank_rates_hint_names_the_step_cap_where_the_run_was_already_sized_by_time():
    from suites.render.tables import blank_hint

    capped = blank_hint({"size_by": "time", "max_steps": 3})
    assert capped.startswith("workload.max_steps=3 ended the run before its timed window") and \
        "workload.size_by=time sizes" not in capped
    assert "workload.size_by=time sizes the run to workload.min_window_s" in blank_hint({"size_by": "steps"})


def test_a_cpu_profiles_validity_says_what_it_is():
    from suites.render.tables import guest_validity

    assert guest_validity("no GPU", [], "enforced", "") == "CPU profile (no GPU asked for)"
    assert guest_validity("no GPU", [], "not enforced", "") == "no GPU: [red]not enforced[/red]"
    assert guest_validity("0", [0], "enforced", "") == "0: enforced"


def test_a_single_runs_rate_carries_its_windows_spread():
    from suites.render.tables import spread_mark

    m = {"images_per_sec": 1394.0, "images_per_sec.jitter_median": 1400.0, "images_per_sec.jitter_mad": 1166.0}
    assert spread_mark("images_per_sec", m) == " ±83%"
    assert spread_mark("images_per_sec", {"images_per_sec": 619.0}) == ""  # under three windows: none to give
    assert spread_mark("train_time_s", m) == ""
