"""Tests of ``suites/campaign/costs.py``'s cache read as data: a hostile or hand-edited ``trials.json`` plans
from the table, never a traceback (its trial runs run in e2e/test_reference_study.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpu_probe.inventory import collect
from suites.campaign import costs


@pytest.mark.parametrize("entry", [["a", 1], "text", 3, None, {"fixed-step/smoke": "abc"},
                                   {"fixed-step/smoke": 1e300}, {"fixed-step/smoke": -2.0},
                                   {"fixed-step/smoke": True}, {"no-slash": 2.0}])
def test_a_hostile_entry_for_this_host_is_skipped_as_data(tmp_path: Path, entry):
    inv = collect()
    (tmp_path / costs.CACHE).write_text(json.dumps({costs.fingerprint(inv): entry}))
    assert costs.cached_trials(tmp_path, inv) == {}


def test_a_good_entry_beside_bad_ones_is_kept(tmp_path: Path):
    inv = collect()
    entry = {"fixed-step/smoke": 4.5, "mnist-torch/full": "abc", "graphics-replay/full": 1e300}
    (tmp_path / costs.CACHE).write_text(json.dumps({costs.fingerprint(inv): entry}))
    assert costs.cached_trials(tmp_path, inv) == {("fixed-step", "smoke"): 4.5}


def test_a_cache_under_its_old_name_is_read_and_its_figures_move_to_the_new_file(tmp_path: Path):
    inv = collect()
    (tmp_path / costs.OLD_CACHE).write_text(json.dumps({costs.fingerprint(inv): {"fixed-step/smoke": 4.5},
                                                        "another host": {"idle/smoke": 1.0}}))
    assert costs.cached_trials(tmp_path, inv) == {("fixed-step", "smoke"): 4.5}
    costs.save(tmp_path, inv, {("fixed-step", "smoke"): 4.5, ("idle", "full"): 2.0})
    saved = json.loads((tmp_path / costs.CACHE).read_text())
    assert saved == {costs.fingerprint(inv): {"fixed-step/smoke": 4.5, "idle/full": 2.0},
                     "another host": {"idle/smoke": 1.0}}


def test_the_old_name_of_study_trials_is_read_and_said():
    from suites.study.settings import load_settings

    with pytest.warns(FutureWarning, match=r"^study.calibrate is study.trials now"):
        assert load_settings(["study.calibrate=false"]).trials is False
    assert load_settings([]).trials is True
