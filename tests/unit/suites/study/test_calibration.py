"""Tests of ``suites/study/calibration.py``'s cache read as data: a hostile or hand-edited ``calibration.json`` plans
from the table, never a traceback (its probes run in e2e/test_study.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpu_probe.inventory import collect
from suites.study import calibration


@pytest.mark.parametrize("entry", [["a", 1], "text", 3, None, {"fixed-step/smoke": "abc"},
                                   {"fixed-step/smoke": 1e300}, {"fixed-step/smoke": -2.0},
                                   {"fixed-step/smoke": True}, {"no-slash": 2.0}])
def test_a_hostile_entry_for_this_host_is_skipped_as_data(tmp_path: Path, entry):
    inv = collect()
    (tmp_path / calibration.CACHE).write_text(json.dumps({calibration.fingerprint(inv): entry}))
    assert calibration.cached(tmp_path, inv) == {}


def test_a_good_entry_beside_bad_ones_is_kept(tmp_path: Path):
    inv = collect()
    entry = {"fixed-step/smoke": 4.5, "mnist-torch/full": "abc", "graphics-replay/full": 1e300}
    (tmp_path / calibration.CACHE).write_text(json.dumps({calibration.fingerprint(inv): entry}))
    assert calibration.cached(tmp_path, inv) == {("fixed-step", "smoke"): 4.5}
