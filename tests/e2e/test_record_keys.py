"""What a run records must not lose a key: results.json paths and MLflow params/metrics/tags/artifacts.

The golden key sets (tests/golden/record_keys.json) were captured by
``python -m tests.support.record_keys write`` before the layered redesign; a key may
be added, none dropped.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.record_keys import GOLDEN, SCENARIOS, assert_keeps, capture


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_no_recorded_key_is_dropped(tmp_path: Path, name: str):
    golden = json.loads(GOLDEN.read_text())[name]
    assert_keeps(golden, capture(name, tmp_path))


def test_the_check_sees_a_dropped_key(tmp_path: Path):
    golden = json.loads(GOLDEN.read_text())["single"]
    assert "guests[].result.metrics.images_per_sec" in golden["results.json"]
    assert "images_per_sec" in golden["mlflow"]["guest:mnist-torch"]["metrics"]
