"""Tests of ``suites/config/schema.py``."""

from __future__ import annotations

import copy
import dataclasses
import functools
import typing
from enum import Enum
from typing import Any

import pytest
from hydra import compose, initialize_config_dir
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.errors import HydraException
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from suites.config.compose import compose_run
from suites.config.scenario import OLD_COUNT_NAMES
from suites.config.schema import CONFIG_DIR, INT_MAX, SENTINELS, BenchConfig, one_line, register_configs
from suites.errors import BenchError
from suites.workloads import registry
from tests.support.helpers import REPO

REFUSED = (BenchError, HydraException, OmegaConfBaseException, ValueError)  # what the CLI turns into one line


TRACE = REPO / "tests" / "test_bad_values.py"  # apitrace-replay needs an existing file to compose at all


GROUP_BASE = {"workload": ["workload.trace=" + str(TRACE)]}  # for workload=apitrace-replay only (below)


# Collections of dataclasses (a comparison's phases, a guest mix, the study's reference figures): wrong type only.
NESTED = {"scenario.phases", "scenario.mix", "scenario.groups", "scenario.mixed.reference"}


def leaves(cls: type, prefix: str) -> list[tuple[str, Any]]:
    """(dotted key, type) of every field of ``cls``, into the dataclasses it holds."""
    hints = typing.get_type_hints(cls)
    out: list[tuple[str, Any]] = []
    for f in dataclasses.fields(cls):
        t = hints[f.name]
        if dataclasses.is_dataclass(t):
            out += leaves(t, f"{prefix}{f.name}.")
        else:
            out.append((f"{prefix}{f.name}", t))
    return out


def base_type(t: Any) -> Any:
    """int for Optional[int], list for list[str], the type itself otherwise."""
    args = [a for a in typing.get_args(t) if a is not type(None)]
    if typing.get_origin(t) in (typing.Union, getattr(__import__("types"), "UnionType", None)) and len(args) == 1:
        return base_type(args[0])
    return typing.get_origin(t) or t


def bad_values(key: str, t: Any) -> list[str]:
    """The override values a key of type ``t`` must refuse."""
    kind = base_type(t)
    if key in NESTED or kind in (list, dict):
        return ["5"]
    if kind is bool:
        return ["maybe"]
    if isinstance(kind, type) and issubclass(kind, Enum):
        return ["bogus"]
    if kind is int:
        return ["x", str(SENTINELS.get(key, 0) - 1), str(INT_MAX + 1), "99999999999999999999"]
    if kind is float:
        return ["x", "-1", "nan", "inf", "-inf"]
    return ["[1,2]"]  # str: a list is the wrong type


def old_name(key: str) -> bool:
    """A renamed key's old name: read into the new one and checked there, under the new name (test_scenario.py)."""
    return key.startswith("scenario.study.") or key == "scenario.mix" or key in {
        f"scenario.mixed.{old}" for old in OLD_COUNT_NAMES}


def cases() -> list[tuple[list[str], str, str]]:
    """(base overrides, key, bad value) for every key of the top level and every group, each workload's own."""
    out = []
    top = [(k, t) for k, t in leaves(BenchConfig, "") if not k.startswith("workload.") and not old_name(k)]
    out += [([], k, v) for k, t in top for v in bad_values(k, t)]
    for name, plugin in sorted(registry().items()):
        base = [f"workload={name}", *(GROUP_BASE["workload"] if name == "apitrace-replay" else [])]
        keys = [(k, t) for k, t in leaves(plugin.config_cls, "workload.") if k not in ("workload.name",)]
        out += [(base, k, v) for k, t in keys for v in bad_values(k, t)]
        out.append((base, "workload.no_such_key", "1"))
    for group in ("profile", "scenario", "scenario.mixed", "data", "sampler", "vm", "ray"):
        out.append(([], f"{group}.no_such_key", "1"))
    out.append(([], "no_such_key", "1"))
    return out


CASES = cases()


@functools.cache
def composed(base: tuple[str, ...]) -> DictConfig:
    """A case's base, composed by Hydra once (a composition takes ~0.4 s; the cases number hundreds)."""
    register_configs()
    return compose_run([*base, "+preset=smoke"]).dcfg


def with_override(base: tuple[str, ...], override: str) -> DictConfig:
    """What Hydra does with one more command-line override: its grammar parses the value, and it is set on the
    composed config as a merge, the schema's types and keys enforced (a key it lacks is refused)."""
    parsed = OverridesParser.create().parse_override(override)
    dcfg = copy.deepcopy(composed(base))
    OmegaConf.update(dcfg, parsed.key_or_group, parsed.value(), merge=True)
    return dcfg


def test_the_generated_cases_cover_every_key_of_every_group():
    keys = {k for _, k, _ in CASES}
    groups = {k.split(".", 1)[0] for k in keys if "." in k}
    assert {"profile", "workload", "scenario", "data", "sampler", "vm", "ray"} <= groups
    assert {"workload.lr", "workload.egl_device", "workload.loops", "scenario.mixed.qos_p95_frame_ms", "seed",
            "vm.boot_timeout_s", "ray.excludes", "profile.mps_share_pct", "data.synthetic_train"} <= keys
    assert len(keys) >= 100 and len(CASES) >= 300, (len(keys), len(CASES))


@pytest.mark.parametrize("base,key,value", CASES, ids=[f"{b[0] if b else 'top'}:{k}={v}" for b, k, v in CASES])
def test_a_bad_value_is_refused_in_one_line_naming_its_key(base: list[str], key: str, value: str):
    with pytest.raises(REFUSED) as refused:
        override = f"{key}={value}"
        compose_run([*base, "+preset=smoke", override], with_override(tuple(base), override))
    line = one_line(refused.value)
    assert "\n" not in line and "Traceback" not in line
    assert key.rsplit(".", 1)[-1] in line, line


def test_the_good_values_of_each_base_compose():
    """The cases' bases are valid: what is refused is the one bad value."""
    for base in {tuple(b) for b, _, _ in CASES}:
        assert compose_run([*base, "+preset=smoke"], composed(base)).cfg.seed == 0


@pytest.mark.heavy
@pytest.mark.parametrize("override", ["workload.lr=inf", "seed=99999999999999999999", "profile.vcpus=x",
                                      "workload.no_such_key=1", "sampler.rate_hz=nan"])
def test_the_override_path_refuses_as_hydra_itself_does(override: str):
    """A sample composed by Hydra with the bad value on its command line: refused the same way, naming the key."""
    register_configs()
    with pytest.raises(REFUSED) as refused:
        compose_run(["+preset=smoke", override])
    assert override.split("=")[0].rsplit(".", 1)[-1] in one_line(refused.value)


def test_slurm_launcher_gives_each_job_a_whole_node():
    register_configs()
    with initialize_config_dir(str(CONFIG_DIR), version_base="1.3"):
        cfg = compose("config", overrides=["hydra/launcher=slurm", "hydra.launcher.partition=gpu"],
                      return_hydra_config=True)
    launcher = cfg.hydra.launcher
    assert launcher._target_.endswith("SlurmLauncher")
    assert launcher.additional_parameters.exclusive is True and launcher.partition == "gpu"
    assert launcher.timeout_min == 120 and launcher.nodes == 1 and launcher.tasks_per_node == 1
