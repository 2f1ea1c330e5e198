"""Tests of ``suites/study/settings.py``: ``study.*`` over the defaults, checked in one line; gpu-check timings."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from suites.errors import ConfigError
from suites.study.settings import load_settings, load_timings, split_args


def test_study_keys_split_from_the_overrides_and_are_checked():
    mine, rest = split_args(["study.repeats=2", "profile.vcpus=1", "study.tier=smoke"])
    assert mine == ["study.repeats=2", "study.tier=smoke"] and rest == ["profile.vcpus=1"]
    s = load_settings(mine)
    assert s.repeats == 2 and s.tier == "smoke"
    for bad, says in (("study.budget_s=0", r"study.budget_s: must be seconds in \(0, 604800\]"),
                      ("study.repeats=21", "study.repeats"),
                      ("study.max_guests=0", "study.max_guests: must be 1..64"), ("study.tier=huge", "study.tier")):
        with pytest.raises(ConfigError, match=says):
            load_settings([bad])


def test_timings_are_read_from_a_gpu_check_summary_and_anything_else_is_one_line(tmp_path: Path):
    good = tmp_path / "summary.json"
    good.write_text(json.dumps({"timings": {"mnist/full": 12.5, "bad": 3, "cifar/smoke": -1}}))
    assert load_timings(str(good)) == {("mnist", "full"): 12.5}  # the unnamed and the negative are left out
    assert load_timings(None) == {}
    (tmp_path / "junk.json").write_text("[1, 2]")
    with pytest.raises(ConfigError, match=r"study.timings: .*junk.json is not a gpu-check summary.json"):
        load_timings(str(tmp_path / "junk.json"))
