"""Tests of ``suites/publish/rerunnable.py``: what a bundle left out is read as names only, and a run that trained on
real data is rerun on real data, its data folder asked for where the bundle left it out (round 7: the rerun trained on
synthetic data in silence, and only a later make compare showed it). The screening of a bundle's command is tested
through publisher.rerun_command (tests/unit/suites/publish/test_publisher.py)."""

from __future__ import annotations

import pytest

from suites.publish.rerunnable import data_needs, left_out

COMMAND = "python -m suites bench scenario=gpu-vs-cpu  # 2 argument(s) naming local paths or stores left out: "


def test_the_keys_left_out_are_read_as_plain_names_only():
    assert left_out(COMMAND + "data.root, tracking_uri") == ["data.root", "tracking_uri"]
    assert left_out("python -m suites bench  # 2 argument(s) naming local paths or stores left out") == []
    assert left_out(COMMAND + "data.root, $(rm -rf /)") == []  # a comment that is not a list of names: nothing


def test_a_run_on_real_data_whose_folder_was_left_out_asks_for_one():
    with pytest.raises(ValueError, match=r"trained on real data from a folder of its host \(data.root, left out"):
        data_needs(COMMAND + "data.root, tracking_uri", "real", [])
    added, said = data_needs(COMMAND + "data.root", "real", ["data.root=/srv/data"])
    assert added == ["data.synthetic=false"] and "so does this one" in said


def test_a_run_on_real_data_from_the_default_folder_reruns_on_real_data_or_stops():
    added, said = data_needs(COMMAND + "tracking_uri", "real", [])
    assert added == ["data.synthetic=false"] and "this host's default, data/" in said
    assert data_needs(COMMAND + "data.root", "real", ["data.root=/d", "data.synthetic=true"])[0] == []  # the user's


@pytest.mark.parametrize("source", ["synthetic", "", "None"])
def test_a_run_on_synthetic_data_needs_nothing(source: str):
    assert data_needs(COMMAND + "data.root", source, []) == ([], "")
