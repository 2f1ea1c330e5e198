"""Tests of ``suites/pipeline/command_line.py``."""

from __future__ import annotations

from pathlib import Path

import pytest

from suites.config import compose as compose_module
from suites.config.schema import register_configs
from suites.errors import ConfigError
from suites.pipeline.command_line import CommandLine, parse_command, precheck
from tests.support.helpers import SMOKE


def test_the_quoted_non_ascii_value_the_hint_gives_is_accepted(tmp_path: Path):
    register_configs()
    checked = precheck(parse_command([*SMOKE, "experiment='é'", f"data.cache_dir={tmp_path / 'd'}",
                                      f"artifact_dir={tmp_path / 'a'}", f"tracking_uri=sqlite:///{tmp_path / 'm.db'}",
                                      f"hydra.run.dir='{tmp_path / 'é'}'"]))
    try:
        assert checked.composed is not None and checked.composed.cfg.experiment == "é"
        assert checked.dirs.run_dir == tmp_path / "é" and (tmp_path / "é").is_dir()
    finally:
        assert checked.claim is not None
        checked.claim.release()


@pytest.mark.heavy
@pytest.mark.parametrize("multirun", [False, True])
def test_the_precheck_composes_each_run_once_with_hydras_node(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                              multirun: bool):
    """The config that runs and the folder it writes come from one composition per run (or sweep point): each is
    0.3 s of CPU in every bench command, and Hydra composes twice more on its own."""
    calls = []
    real = compose_module.hydra_compose
    monkeypatch.setattr(compose_module, "hydra_compose", lambda *a, **k: calls.append(k) or real(*a, **k))
    register_configs()
    own = [f"data.cache_dir={tmp_path / 'd'}", f"artifact_dir={tmp_path / 'a'}",
           f"tracking_uri=sqlite:///{tmp_path / 'm.db'}"]
    line = parse_command(["-m", *SMOKE, "seed=1,2", *own, f"hydra.sweep.dir={tmp_path / 's'}"] if multirun
                         else [*SMOKE, *own, f"hydra.run.dir={tmp_path / 'r'}"])
    checked = precheck(line)
    try:
        assert len(calls) == (2 if multirun else 1) and all(k["return_hydra_config"] for k in calls)
        if not multirun:
            assert checked.composed is not None and "hydra" not in checked.composed.dcfg
            assert checked.dirs.run_dir == tmp_path / "r"
        else:
            assert checked.dirs.sweep_dir == tmp_path / "s" and checked.named == [["seed=1"], ["seed=2"]]
    finally:
        assert checked.claim is not None
        checked.claim.release()


def test_hydra_flags_with_a_value_are_not_taken_for_overrides():
    assert parse_command(["--cfg", "job", "-p", "scenario", "--info", "searchpath", "x=1"]) ==\
        CommandLine(["x=1"], informational=True)
    assert parse_command(["-m", "--config-dir=extra", "a=1,2"]) == CommandLine(["a=1,2"], True, "extra")
    assert parse_command(["-cd", "extra", "a=1"]) == CommandLine(["a=1"], False, "extra")


def test_a_flag_hydra_refuses_is_one_config_error_not_argparses_usage():
    with pytest.raises(ConfigError, match=r"^argument --info/-i: invalid choice: 'x=1' .*Hydra's flags: --help"):
        parse_command(["--info", "x=1"])
    with pytest.raises(ConfigError, match=r"^argument --config-dir/-cd: expected one argument"):
        parse_command(["--config-dir"])


def test_sweep_points_are_hydras_basic_sweepers_jobs_named_by_their_swept_values():
    from suites.pipeline.command_line import sweep_points

    assert sweep_points(["profile=a,b", "+seed=range(2)", "x=1"]) == [
        (["profile=a", "+seed=0", "x=1"], ["profile=a", "+seed=0"]),
        (["profile=a", "+seed=1", "x=1"], ["profile=a", "+seed=1"]),
        (["profile=b", "+seed=0", "x=1"], ["profile=b", "+seed=0"]),
        (["profile=b", "+seed=1", "x=1"], ["profile=b", "+seed=1"])]
    assert sweep_points(["x='a,b'"]) == [(["x='a,b'"], [])]  # a quoted comma is a value, not a sweep


@pytest.mark.parametrize("args, says", [
    (["-m", "seed=range(0)"], "the sweep has no points (seed=range(0) gives no value): nothing to run"),
    (["--cfg", "job", "profile=m60-9q"], "Could not find 'profile/m60-9q'"),
    (["--cfg", "job", "-m", "profile=m60-1q,m60-9q"], "sweep point profile=m60-9q: "),
    (["--cfg", "job", f"+{'k' * 300}=1"], "a key of 300 bytes"),
])
def test_sweeps_and_hydras_printing_flags_are_checked_before_hydra_starts(args: list[str], says: str):
    """A 0-point sweep and ``--cfg job`` with a bad value are one line each (not an IndexError traceback, not
    Hydra's own multi-line error)."""
    from hydra.errors import HydraException

    from suites.config.schema import one_line, register_configs
    from suites.errors import BenchError
    from suites.pipeline.command_line import parse_command, precheck

    register_configs()
    with pytest.raises((BenchError, HydraException)) as exc:  # what the command turns into its one error: line
        precheck(parse_command(args))
    assert says in one_line(exc.value) and "\n" not in one_line(exc.value)


def test_a_long_value_that_is_not_a_file_name_is_taken():
    from suites.config.schema import register_configs
    from suites.pipeline.command_line import parse_command, precheck

    register_configs()
    assert precheck(parse_command(["--cfg", "job", f"+note='{'a b ' * 200}'"])).composed is None
