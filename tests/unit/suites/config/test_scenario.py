"""Tests of ``suites/config/scenario.py``."""

from __future__ import annotations

import pytest

from suites.run.plan import peer_timeout_s


def test_nccl_timeout_outlasts_every_wait_a_peer_can_see():
    from suites.config.scenario import ScenarioConfig

    s = ScenarioConfig(name="x")
    assert peer_timeout_s(s.start_timeout_s, s.timeout_s) > s.start_timeout_s + s.timeout_s  # was 300 s flat
    from suites.guest.protocol import GuestSpec

    spec = GuestSpec("g0", "p", "w", {}, {}, [], [], None, 1024)
    assert spec.peer_timeout_s > s.start_timeout_s


# --- scenario.study, the old name of scenario.mixed, read for a release -------------------------------------------
@pytest.mark.heavy
def test_the_old_name_is_taken_as_the_new_field_by_field_and_said():
    import pytest

    from suites.config.compose import compose_run
    from suites.config.schema import register_configs

    register_configs()
    with pytest.warns(FutureWarning, match=r"^scenario.study is scenario.mixed now: scenario.study.cad.overrides, "
                                           r"scenario.study.max_guests taken as scenario.mixed"):
        old = compose_run(["scenario=consolidation", "scenario.study.max_guests=2",
                           "scenario.study.cad.overrides=['workload.size=small']"])
    new = compose_run(["scenario=consolidation", "scenario.mixed.max_guests=2",
                       "scenario.mixed.cad.overrides=['workload.size=small']"])
    assert old.cfg.scenario.mixed == new.cfg.scenario.mixed and [r.label for r in old.runs] == [r.label for r in
                                                                                              new.runs]
    assert new.cfg.scenario.mixed.cad.workload == "graphics-replay"  # the group's other fields as the new name has them


def test_a_runs_params_carry_the_renamed_keys_under_their_old_names_too():
    from suites.config.scenario import with_old_names

    params = {"scenario.mixed.max_guests": 4, "scenario.study.max_guests": 4, "scenario.mixed.cad.workload": "x",
              "scenario.kind": "mixed"}
    got = with_old_names({**params, "scenario.study.max_guests": 9})  # the old node's own default: replaced
    assert got == {**params, "scenario.study.cad.workload": "x"}


@pytest.mark.heavy
def test_the_old_name_of_groups_overrides_a_scenario_files_groups_and_is_said():
    import pytest

    from suites.config.compose import compose_run
    from suites.config.schema import register_configs

    register_configs()
    line = "[{workload:idle,guests:2},{workload:fixed-step,guests:1}]"
    with pytest.warns(FutureWarning, match=r"^scenario.mix is scenario.groups now"):
        old = compose_run(["scenario=mixed-once", f"scenario.mix={line}"])
    new = compose_run(["scenario=mixed-once", f"scenario.groups={line}"])
    assert [(g.workload.name, g.guests) for g in old.runs[0].groups] == [("idle", 2), ("fixed-step", 1)] == \
        [(g.workload.name, g.guests) for g in new.runs[0].groups]
    recorded = old.dcfg.scenario  # what a run's params are made from: the groups under their new name
    assert [(g.workload, g.guests) for g in recorded.groups] == [("idle", 2), ("fixed-step", 1)] and not recorded.mix


@pytest.mark.heavy
def test_a_consolidations_counts_given_under_their_old_names_are_read_said_and_recorded_under_both():
    import pytest

    from suites.config.compose import compose_run
    from suites.config.scenario import with_old_names
    from suites.config.schema import register_configs
    from suites.record.store import flatten

    register_configs()
    with pytest.warns(FutureWarning, match=r"^scenario.mixed.steps is counts, scenario.mixed.steps_past_miss is "
                                           r"counts_past_miss now"):
        old = compose_run(["scenario=consolidation", "scenario.mixed.steps=[1,3]", "scenario.mixed.steps_past_miss=0"])
    new = compose_run(["scenario=consolidation", "scenario.mixed.counts=[1,3]", "scenario.mixed.counts_past_miss=0"])
    assert old.cfg.scenario.mixed == new.cfg.scenario.mixed
    assert (new.cfg.scenario.mixed.counts, new.cfg.scenario.mixed.counts_past_miss) == ([1, 3], 0)
    assert [r.label for r in old.runs] == [r.label for r in new.runs]
    from omegaconf import OmegaConf

    params = with_old_names(flatten(OmegaConf.to_container(old.dcfg, resolve=True)))
    assert params["scenario.mixed.counts"] == params["scenario.mixed.steps"] == [1, 3]
    assert params["scenario.mixed.counts_past_miss"] == params["scenario.mixed.steps_past_miss"] == 0


@pytest.mark.heavy
def test_a_runs_params_record_what_was_given_under_the_old_group_name_not_the_new_names_default():
    import pytest
    from omegaconf import OmegaConf

    from suites.config.compose import compose_run
    from suites.config.scenario import with_old_names
    from suites.config.schema import register_configs
    from suites.record.store import flatten

    register_configs()
    with pytest.warns(FutureWarning):
        old = compose_run(["scenario=consolidation", "scenario.study.max_guests=2"])
    params = with_old_names(flatten(OmegaConf.to_container(old.dcfg, resolve=True)))
    assert params["scenario.mixed.max_guests"] == params["scenario.study.max_guests"] == 2
