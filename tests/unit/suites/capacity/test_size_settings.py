"""Tests of ``suites/capacity/size_settings.py``: a sizing's settings from its file and ``sizing.*``, checked, and
as the MLflow params two sizings are compared on."""

from __future__ import annotations

import pytest

from suites.capacity.size_settings import describe, load_settings, split_args
from suites.errors import ConfigError


def test_the_command_line_splits_into_the_file_its_settings_and_the_bench_overrides():
    name, mine, rest = split_args(["sizing=default", "sizing.repeats=2", "profile.vcpus=1", "+preset=smoke"])
    assert (name, mine, rest) == ("default", ["sizing.repeats=2"], ["profile.vcpus=1", "+preset=smoke"])
    assert split_args([])[0] == "default"


def test_a_setting_over_the_file_is_checked_and_its_limits_drop_the_unlimited():
    s = load_settings("default", ["sizing.repeats=2", "sizing.qos.cad_p99_frame_ms=150"])
    assert s.repeats == 2 and s.limits["cad_p99_frame_ms"] == 150.0 and "cad_stutter_pct" not in s.limits
    with pytest.raises(ConfigError, match=r"sizing.repeats: must be 1..20, got 0"):
        load_settings("default", ["sizing.repeats=0"])
    with pytest.raises(ConfigError, match=r"sizing=../x: no such sizing file"):
        load_settings("../x", [])


def test_the_params_name_the_mix_and_limits_first_and_the_steps_measured():
    params = describe(load_settings("default", ["sizing.steps=[1,2,4]"]))
    assert list(params)[:2] == ["mix", "cad_size"] and params["mix"] == "cad=20,ml=2"
    assert params["steps"] == "1,2,4" and describe(load_settings("default", []))["steps"] == "each"
