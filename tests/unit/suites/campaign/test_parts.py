"""Tests of ``suites/campaign/parts.py``: a campaign's part composed as make bench composes one, or one error line
naming the part."""

from __future__ import annotations

from pathlib import Path

import pytest

from suites.campaign.parts import compose_part
from suites.config.schema import register_configs
from suites.errors import ConfigError


@pytest.fixture(autouse=True)
def configs():
    register_configs()  # the structured configs a composition reads (as every command registers them first)


def test_a_part_composes_with_its_phases_as_a_bench_would():
    comp = compose_part(["scenario=gpu-vs-cpu", "workload=fixed-step"], "study part gpu-vs-cpu")
    assert [r.label for r in comp.runs] == ["1-gpu", "cpu"]


def test_a_part_that_does_not_compose_or_cannot_write_is_one_error_naming_it(tmp_path: Path):
    with pytest.raises(ConfigError, match=r"^sizing part m60-2q/timeslice: .*no_such_scenario"):
        compose_part(["scenario=no_such_scenario"], "sizing part m60-2q/timeslice")
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    with pytest.raises(ConfigError):  # its artifact folder lies under a file: refused before anything starts
        compose_part(["workload=fixed-step", f"artifact_dir={blocker / 'artifacts'}"], "study part x")
