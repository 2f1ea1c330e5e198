"""Tests of ``suites/gpucheck/settings.py``: make gpu-check's ``key=value`` arguments read into its settings, a bad
one refused as one ConfigError before any check (the command's exit 2: tests/e2e/test_gpu_check.py)."""

from __future__ import annotations

import dataclasses
import time

import pytest

from suites.errors import ConfigError
from suites.gpucheck.campaign import BUDGET_S
from suites.gpucheck.settings import DataSettings, GpuCheckSettings, parse


def test_the_defaults_and_each_key(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv("BENCH_DATA_ROOT", raising=False)
    assert parse([]) == GpuCheckSettings(DataSettings(None), BUDGET_S, [], "outputs/gpu-check", False)
    s = parse(["data.root=/d", "budget_s=120", "only=b1,a", "out_dir=o", "strict=TRUE"])
    assert s == GpuCheckSettings(DataSettings("/d"), 120.0, ["b1", "a"], "o", True) and s.data_root == "/d"
    assert parse(["only=[a,b2]"]).only == parse(["only=a,b2"]).only == ["a", "b2"]  # the grammar's list, or a,b2


def test_the_settings_are_read_one_way_frozen_with_a_relative_data_root_made_absolute(tmp_path, monkeypatch):
    """Issue 89: Hydra's override grammar through load_own, as the study's and the sizing's settings (a hand split of
    key=value read budget_s=1e3 and data.root=./d as given)."""
    monkeypatch.chdir(tmp_path)
    s = parse(["data.root=./d", "budget_s=1e3", "started_at=null"])
    assert s.data_root == str(tmp_path / "d") and s.budget_s == 1000.0 and s.started_at is None
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.budget_s = 1.0  # type: ignore[misc]


def test_the_data_root_defaults_to_the_environments_and_an_explicit_one_wins(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("BENCH_DATA_ROOT", "/env")
    assert parse([]).data_root == "/env" and parse(["data.root=/given"]).data_root == "/given"


@pytest.mark.parametrize(("arg", "said"), [
    ("budget_s=nan", "positive number of seconds, got nan"), ("budget_s=-1", "positive number"),
    ("budget_s=ten", "budget_s: Value 'ten' .* could not be converted to Float"),
    ("strict=maybe", "strict: Value 'maybe' is not a valid bool"),
    ("only=a,zz", "only= names unknown checks zz"), ("only=[a,[b]]", r"only= names unknown checks \['b'\]"),
    ("colour=red", "Key 'colour' not in 'GpuCheckSettings'"),
    ("budget_s", "unknown argument 'budget_s'"), ("out_dir=a,b", "out_dir: give one value"),
    ("started_at=soon", "started_at: Value 'soon' .* could not be converted"),
    ("started_at=inf", "is not a time before now"),
    ("started_at=nan", "is not a time before now"), ("started_at={in_an_hour}", "not a time before now"),
    ("started_at={ten_minutes_ago}", r"began 60\d s ago: budget_s=540 from it is spent before any check"),
])
def test_each_refusal_is_one_config_error(arg: str, said: str):
    # a time is put in as the test runs: in an id, every xdist worker would collect a different test
    now = time.time()
    with pytest.raises(ConfigError, match=said):
        parse([arg.format(in_an_hour=f"{now + 3600:.0f}", ten_minutes_ago=f"{now - 600:.0f}")])


def test_budget_s_counts_from_the_device_calls_start_where_the_call_says_so():
    """a lent GPU's call spends a minute on its set-up before gpu-check starts: budget_s=540 from gpu-check's own
    start ran the call past its 10 minutes"""
    started = time.time() - 90
    assert parse([f"started_at={started}"]).started_at == started
    assert parse([]).started_at is None
