"""Tests of ``suites/run/execute.py`` with real guest processes of the ``fixed-step`` workload (a step a
millisecond, as on a GPU): two guests started, released together and collected into a plain-data outcome (each
guest's result and log, the host's aggregates, the window the sampler saw); the host looked at before they start
only where its threshold can be passed."""

from __future__ import annotations

from pathlib import Path

import pytest

from suites.config.compose import compose_run
from suites.config.schema import register_configs
from suites.run import execute
from suites.run.plan import plan


def planned(tmp_path: Path, *overrides: str):
    register_configs()
    comp = compose_run(["workload=fixed-step", "+preset=smoke", "workload.step_ms=1", "progress=quiet",
                        f"artifact_dir={tmp_path / 'art'}", *overrides])
    return plan(comp.runs[0])


@pytest.mark.heavy
def test_guests_run_together_and_come_back_as_a_plain_data_outcome(tmp_path: Path):
    out = execute.execute(planned(tmp_path, "scenario=concurrent", "scenario.guests=2", "profile.vcpus=1"),
                          tmp_path / "logs")
    assert out.status == "ok" and out.exit_code == 0 and [g.result.ok for g in out.guests] == [True, True]
    assert {g.spec.guest_id for g in out.guests} == {"g0", "g1"}
    assert all(g.log_path.parent == tmp_path / "logs" and g.log_path.is_file() for g in out.guests)
    assert out.makespan_s is not None and 0 < out.makespan_s < 120 and out.started_at < out.ended_at
    assert execute.still_running([]) == []


@pytest.mark.heavy
def test_the_host_is_looked_at_before_the_guests_only_where_its_threshold_can_be_passed():
    import os

    assert execute.look_at_host(100.0 * (os.cpu_count() or 1)) is None  # never passable: no look
    load = execute.look_at_host(100.0 * (os.cpu_count() or 1) - 1)  # looked at
    assert load is not None and 0 <= load.other_pct


def test_a_comparisons_runs_share_one_look_at_the_host_taken_while_it_starts(monkeypatch: pytest.MonkeyPatch,
                                                                            capsys: pytest.CaptureFixture[str]):
    from gpu_probe.hostload import HostLoad

    looks = []
    monkeypatch.setattr(execute, "other_load", lambda s: looks.append(s) or HostLoad(300.0, 0.0, s))
    around = execute.Around()
    around.look_now(25.0)  # on its own thread
    first, second = around.host_before(25.0), around.host_before(25.0)
    assert looks == [0.5] and first is second and first.other_pct == 300.0
    assert capsys.readouterr().err.count("note: host busy before the run") == 1  # said once, by the caller's thread
    never = execute.Around()
    never.look_now(100.0 * 4096)  # a threshold nothing passes: no look, no thread
    assert never.looking is None and never.host_before(100.0 * 4096) is None and looks == [0.5]


@pytest.mark.heavy
def test_a_comparisons_preloaded_guest_starts_before_its_first_run_only_where_its_guests_may_be_forked(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    from types import SimpleNamespace

    asked: list[list[str]] = []
    monkeypatch.setattr(execute.ForkServer, "prewarm", lambda self, modules: asked.append(modules))
    local = planned(tmp_path, "scenario=concurrent", "scenario.guests=2")
    elsewhere = SimpleNamespace(backend=SimpleNamespace(forks_guests=False), specs=local.specs)  # a VM's, a Ray's
    around = execute.Around()
    around.preload([elsewhere])  # type: ignore[list-item]
    assert around.forks is None and asked == []
    around.preload([local, local])  # the phases' guests' imports, each once
    assert around.forks is not None and asked == [["suites.workloads.fixed_step"]]
    around.close()
