"""Tests of ``suites/config/compose.py``."""

from __future__ import annotations

import pytest
from omegaconf import OmegaConf

from suites.config.compose import compose_phase, compose_run, mixed_phases, without_hydra
from suites.config.schema import register_configs
from suites.pipeline.hydra_dirs import hydra_node
from tests.support.helpers import SMOKE, compose_config


@pytest.mark.heavy
@pytest.mark.parametrize("overrides", [[*SMOKE], [*SMOKE, "scenario=gpu-vs-cpu"], ["scenario=mixed", "profile=m60-8q"],
                                       ["workload=graphics-replay", "profile=m60-1q", "hydra.run.dir=/tmp/zz/r"]])
def test_the_config_read_from_hydras_node_is_the_plain_composition(overrides: list[str]):
    """What the precheck runs (one composition with Hydra's node, the node dropped) is what composing without the
    node gives: the run's config, each phase's and the recorded config.yaml alike."""
    register_configs()
    plain = compose_run(overrides)
    node = hydra_node(overrides)
    read = compose_run(overrides, without_hydra(node))
    assert "hydra" in node and read.cfg == plain.cfg
    assert [OmegaConf.to_yaml(r.dcfg) for r in read.runs] == [OmegaConf.to_yaml(r.dcfg) for r in plain.runs]
    assert OmegaConf.to_yaml(read.dcfg) == OmegaConf.to_yaml(plain.dcfg) and OmegaConf.is_struct(read.dcfg)


@pytest.mark.heavy
@pytest.mark.parametrize("scenario,phases", [
    ("gpu-vs-cpu", {"1-gpu": "passthrough-1gpu", "cpu": "cpu"}),
    ("passthrough-vs-vgpu", {"passthrough": "passthrough-1gpu", "vgpu-8q": "m60-8q"}),
    ("scaling", {"1-gpu": "passthrough-1gpu", "2-gpu": "passthrough-2gpu", "4-gpu": "passthrough-4gpu"}),
    ("multi-guest", {"1x4gpu": "passthrough-4gpu", "4x1gpu": "passthrough-1gpu", "4xvgpu-8q": "m60-8q"}),
])
def test_shipped_comparisons_compose_phase_by_phase(scenario: str, phases: dict):
    cfg = compose_config(f"scenario={scenario}", "profile.vcpus=1")
    assert [p.label for p in cfg.scenario.phases] == list(phases)
    for phase in cfg.scenario.phases:
        pcfg, _ = compose_phase([f"scenario={scenario}", "profile.vcpus=1"], phase)
        assert pcfg.profile.name == phases[phase.label] and pcfg.profile.vcpus == 1  # command line still applies
        assert pcfg.scenario.phases == []
    if scenario == "multi-guest":
        assert compose_phase([f"scenario={scenario}"], cfg.scenario.phases[1])[0].scenario.guests == 4


@pytest.mark.heavy
def test_explicit_data_root_beats_the_environment(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("BENCH_DATA_ROOT", "/from/env")
    assert compose_config().data.root == "/from/env"
    assert compose_config("data.root=/explicit").data.root == "/explicit"


def test_mixed_phases_are_three_per_profile_with_their_mix():
    cfg = compose_config("scenario=mixed", "scenario.mixed.profiles=[m60-8q,m60-1q]")
    labels = [(p.label, p.overrides, [(g.workload, g.guests) for g in p.groups]) for p in mixed_phases(cfg)]
    assert labels[:3] == [("m60-8q/cad", ["profile=m60-8q"], [("graphics-replay", 1)]),
                          ("m60-8q/mixed", ["profile=m60-8q"], [("graphics-replay", 1), ("mnist-torch", 1)]),
                          ("m60-8q/ml", ["profile=m60-8q"], [("mnist-torch", 1)])]
    assert [lab for lab, _, _ in labels[3:]] == ["m60-1q/cad", "m60-1q/mixed", "m60-1q/ml"]


def test_a_consolidation_sizes_its_guests_from_the_host_where_the_profile_does_not_fit(monkeypatch):
    from types import SimpleNamespace

    from suites.config import compose
    from tests.support.helpers import compose_config

    monkeypatch.setattr(compose.psutil, "virtual_memory", lambda: SimpleNamespace(total=24105 * 2**20))
    cfg = compose_config("scenario=consolidation", "profile=m60-2q", "scenario.mixed.max_guests=8")
    size, note = compose.consolidation_memory(cfg)
    assert size == 2304 and "9 guests x 8192 MiB (profile m60-2q) > 24105 MiB host memory" in note
    phases = compose.mixed_phases(cfg)
    assert len(phases) == 9 and all("profile.memory_MiB=2304" in p.overrides for p in phases)
    assert compose.consolidation_memory(compose_config("scenario=consolidation", "profile=m60-2q"))[0] == 4096
    assert compose.consolidation_memory(compose_config("scenario=consolidation", "profile=m60-2q",
                                                       "profile.memory_MiB=2048"))[0] is None  # fits as it is


def test_a_guest_groups_workload_is_composed_once_per_process_and_each_caller_gets_its_own_copy(monkeypatch):
    """A sizing's phases repeat their groups: composed once (outside the Hydra app), never shared between callers."""
    from suites.config import compose as module

    register_configs()
    module.composed_workload.cache_clear()
    calls: list[list[str]] = []
    real = module.compose
    monkeypatch.setattr(module, "compose", lambda overrides, groups=None: calls.append(overrides) or real(overrides))
    first = module.group_workload("graphics-replay", ("workload.frames_per_test=8",), "full")
    second = module.group_workload("graphics-replay", ("workload.frames_per_test=8",), "full")
    other = module.group_workload("graphics-replay", ("workload.frames_per_test=9",), "full")
    assert calls == [["workload=graphics-replay", "scale=full", "workload.frames_per_test=8"],
                     ["workload=graphics-replay", "scale=full", "workload.frames_per_test=9"]]
    assert first == second and first is not second and other.frames_per_test == 9
    first.frames_per_test = 1  # a caller's change stays its own
    assert module.group_workload("graphics-replay", ("workload.frames_per_test=8",), "full").frames_per_test == 8
    module.composed_workload.cache_clear()


@pytest.mark.heavy
def test_a_guest_groups_workload_takes_the_runs_scale_and_its_own_overrides_win():
    """+preset=smoke is each workload's smoke sizes, a mixed run's groups' too: its CAD guests replay the smoke
    frames of each test (they replayed every frame, six times what a smoke sizing's plan counted) and its ML guest
    trains the smoke network; a value the group sets itself still wins; a full-size run is untouched."""
    register_configs()
    smoke = compose_run([*SMOKE, "scenario=mixed", "profile=m60-8q"])
    full = compose_run(["scenario=mixed", "profile=m60-8q"])
    mixed = next(r for r in smoke.runs if r.label.endswith("/mixed"))
    cad, ml = (g.workload for g in mixed.groups)
    assert (cad.name, cad.frames_per_test, cad.size) == ("graphics-replay", 8, "small")
    assert (ml.name, ml.width, ml.train_limit, ml.until_stopped) == ("mnist-torch", 8, 12000, True)  # the group's wins
    cad_full, ml_full = (g.workload for g in next(r for r in full.runs if r.label.endswith("/mixed")).groups)
    assert cad_full.frames_per_test is None and ml_full.width == 16
    told = compose_run([*SMOKE, "scenario=mixed", "profile=m60-8q",
                        "scenario.mixed.cad.overrides=['workload.frames_per_test=3']"])
    assert next(r for r in told.runs if r.label.endswith("/mixed")).groups[0].workload.frames_per_test == 3


def test_a_composition_cached_before_the_environment_changed_is_not_handed_out_after(monkeypatch):
    """tests/support/helpers.compose_config composes each set of overrides once per process: the environment the
    config reads is part of its key (this test failed after any other that had composed no overrides first)."""
    monkeypatch.delenv("BENCH_DATA_ROOT", raising=False)
    before = compose_config().data.root
    monkeypatch.setenv("BENCH_DATA_ROOT", "/from/env")
    assert compose_config().data.root == "/from/env" != before
    import re

    from tests.support.helpers import CONFIG_ENV, REPO

    read = {m for p in (REPO / "configs").rglob("*.yaml") for m in re.findall(r"oc\.env:(\w+)", p.read_text())}
    assert read == set(CONFIG_ENV)  # a variable configs/ reads and the key leaves out would bring the bug back


def test_a_composition_outside_the_app_is_made_once_and_each_caller_gets_a_copy_read_in_its_own_environment(
        monkeypatch):
    """A plan composes its phases again for every part: Hydra composes each distinct one once a process; Hydra's own
    node (the working directory it records) is composed every time; the environment the config reads is read when a
    copy is loaded, not when the composition was cached."""
    from suites.config import compose as module

    register_configs()
    module.composed_config.cache_clear()
    calls: list[list[str]] = []
    real = module.hydra_compose
    monkeypatch.setattr(module, "hydra_compose", lambda name, overrides, **kw: calls.append(overrides)
                        or real(name, overrides=overrides, **kw))
    monkeypatch.setenv("BENCH_DATA_ROOT", "/first")
    first = module.compose(["profile=m60-2q"])
    monkeypatch.setenv("BENCH_DATA_ROOT", "/second")
    second = module.compose(["profile=m60-2q"])
    assert len(calls) == 1 and first[1] is not second[1]
    assert (first[0].data.root, second[0].data.root) == ("/first", "/second")
    first[1].profile.vcpus = 99  # a caller's change stays its own
    assert module.compose(["profile=m60-2q"])[0].profile.vcpus != 99 and len(calls) == 1
    module.compose_raw(["profile=m60-2q"], with_hydra=True)
    module.compose_raw(["profile=m60-2q"], with_hydra=True)
    assert len(calls) == 3
    module.composed_config.cache_clear()
