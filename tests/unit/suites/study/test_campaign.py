"""Tests of ``suites/study/campaign.py``: the study planned as a campaign before anything starts (every part composed,
its estimate and episode carried, the deadline ``study.budget_s`` after the start, the whole host leased, the run
tree exported), and each problem refused in one ConfigError naming what is wrong."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console

from gpu_probe.inventory import collect
from suites.config.schema import register_configs
from suites.errors import ConfigError
from suites.study import campaign
from suites.study.plan import Measured, StudyPlan, plan_study
from suites.study.settings import StudySettings
from tests.support.helpers import store_at


def study(tmp_path: Path, **settings) -> campaign.Study:
    register_configs()
    overrides = [f"tracking_uri={store_at(tmp_path / 'mlflow.db')}", f"artifact_dir={tmp_path / 'art'}"]
    return campaign.Study(StudySettings(out_dir=str(tmp_path / "study"), trials=False, **settings), collect(),
                          overrides, 0, "no GPU", {"tensorflow": "tensorflow not installed: Keras rows skipped"},
                          Measured())


@pytest.mark.heavy
def test_the_study_is_a_whole_host_campaign_of_its_planned_parts_with_their_estimates(tmp_path: Path):
    s = study(tmp_path, budget_s=900)
    sp, camp = campaign.campaign_of(s, False, 1000.0, Console(file=io.StringIO()))
    assert camp.kind == "study" and camp.whole_host and camp.export and camp.deadline == 1900.0
    assert camp.part_tag == "bench.study_part" and camp.out_dir == tmp_path / "study"
    assert [p.name for p in camp.parts] == [p.name for p in sp.parts] and camp.parts
    for part, planned in zip(camp.parts, sp.parts, strict=True):
        assert part.estimate_s == sp.part_estimates[planned.name] > 0
        assert part.tags == {"bench.episode": str(planned.episode)}
        assert part.title == f"episode {planned.episode} {planned.name}"
        assert part.comp.cfg.tracking_uri == s.overrides[0].split("=", 1)[1]
    assert camp.left_out == [str(skip) for skip in sp.skips]
    assert any(line.startswith("mnist-tf") or "tensorflow" in line for line in camp.left_out)


def test_a_part_that_does_not_compose_is_one_config_error_naming_it(tmp_path: Path):
    s = study(tmp_path)
    s.overrides.append("workload.no_such_key=1")
    with pytest.raises(ConfigError, match=r"^study part [\w-]+: .*no_such_key"):
        campaign.campaign_of(s, False, 0.0, Console(file=io.StringIO()))


def test_a_study_whose_smallest_plan_is_past_its_budget_is_refused_with_the_budget_it_needs():
    sp = StudyPlan([], [], "smoke", 1, 500.0, 0)
    campaign.require_fits(sp, 500.0)
    with pytest.raises(ConfigError, match=r"^study.budget_s=100: the smallest study this host can run .* takes about "
                                          r"500 s by its estimate; give study.budget_s >= 625$"):
        campaign.require_fits(sp, 100.0)


def test_what_this_python_lacks_is_named_with_what_the_study_loses():
    missing = campaign.missing_components()
    assert set(missing) <= {"tensorflow", "moderngl"}
    assert all(why.endswith(("Keras rows skipped", "CAD guests cannot render")) for why in missing.values())


@pytest.mark.heavy
def test_a_part_keeps_only_the_phases_the_planner_kept():
    register_configs()
    plan = plan_study(2, {"tensorflow": "not installed"}, StudySettings(budget_s=10_000))
    comps = campaign.compose_parts(plan, ["progress=quiet"])
    assert [r.label for r in comps["scaling"].runs] == ["1-gpu", "2-gpu"]
    assert [r.label for r in comps["mixed"].runs][:3] == ["m60-8q/cad", "m60-8q/mixed", "m60-8q/ml"]
    assert comps["gpu-vs-cpu"].cfg.scenario.repeats == plan.repeats
