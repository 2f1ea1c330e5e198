"""Tests of ``suites/sizing/campaign.py``: a sizing's plan as a campaign (one part per consolidation, tagged
with its reuse key), a stored consolidation of the same measurement reused (before and after the part's lease), and
the runs measured or reused found again by (profile, policy, type)."""

from __future__ import annotations

import contextlib
import io
import math
from pathlib import Path

import pytest
from rich.console import Console

from suites.campaign import CampaignRun, executor
from suites.pipeline.orchestrate import Nest
from suites.record.recorder import Recorder
from suites.sizing.campaign import campaign_of, measured_ids
from tests.support.consolidations import planned_sizing, recorded

OK = {1: {"frame_ms": 40.4, "p95": 70.0, "rate": 990.0}, 2: {"frame_ms": 41.2, "p95": 80.0, "rate": 960.0}}


def started(tmp_path: Path, *args: str):
    settings, inv, plan, uri = planned_sizing(tmp_path, *args)
    campaign = campaign_of(settings, plan)
    recorder = Recorder(plan.parts[0].comp.cfg, [].append)
    parent = recorder.start_parent("sizing-test", {"bench.kind": "sizing"})
    return plan, uri, CampaignRun(campaign, tmp_path / "run", Nest(recorder, parent, launcher="size"))


@pytest.mark.heavy
def test_each_consolidation_is_a_part_named_by_its_label_and_tagged_with_its_reuse_key(tmp_path: Path):
    settings, _, plan, _ = planned_sizing(tmp_path, "sizing.users.light=20", "sizing.users.heavy=5")
    campaign = campaign_of(settings, plan)
    assert campaign.kind == "sizing" and campaign.part_tag == "bench.sizing_part" and not campaign.whole_host
    assert [p.name for p in campaign.parts] == [p.label for p in plan.parts] and len(plan.parts) == 2
    assert [p.tags for p in campaign.parts] == [{"bench.sizing_key": p.key} for p in plan.parts]
    assert campaign.parts[0].folder == plan.parts[0].label.replace("/", "-")


@pytest.mark.heavy
def test_a_stored_consolidation_of_the_same_measurement_is_reused_not_measured(tmp_path: Path, monkeypatch):
    plan, uri, run = started(tmp_path)
    (part,) = plan.parts
    key, rid = recorded(uri, part, OK)
    monkeypatch.setattr(executor, "plan_and_lease", lambda *a, **k: pytest.fail("leased for a stored measurement"))
    text = io.StringIO()
    executor.run_parts(run, {}, Console(file=text, width=200))
    assert [(p.how, p.run_id) for p in run.parts] == [("reused", rid)] and measured_ids(plan, run) == {key: rid}
    assert f"size part 1/1: {part.label}: reused consolidation run {rid} ==" in text.getvalue()


@pytest.mark.heavy
def test_a_consolidation_another_sizing_measured_while_this_one_waited_is_taken_not_measured_twice(
        tmp_path: Path, monkeypatch):
    """Two sizings of the same thing at once on one store: the second waits for the first's cores; by then the
    first has recorded the consolidation, so the second takes it instead of measuring it again."""
    plan, uri, run = started(tmp_path)
    (part,) = plan.parts
    other: list[str] = []

    def waited(*args, **kwargs):  # the other sizing finishes its consolidation while this one waits for cores
        other.append(recorded(uri, part, OK)[1])
        return None, contextlib.nullcontext()

    monkeypatch.setattr(executor, "plan_and_lease", waited)
    monkeypatch.setattr(executor, "run_comparison", lambda *a, **k: pytest.fail("measured twice"))
    text = io.StringIO()
    executor.run_parts(run, {}, Console(file=text, width=200))
    assert measured_ids(plan, run) == {(part.profile, part.policy, part.user_type): other[0]} and run.stopped == ""
    assert f"measured meanwhile by another sizing: reused consolidation run {other[0]}" in text.getvalue()


@pytest.mark.heavy
def test_a_sizing_starts_only_the_consolidations_that_can_end_within_its_budget_and_says_which_were_not(
        tmp_path: Path, monkeypatch):
    """A sizing has the study's hard deadline: sizing.budget_s from its start. Here the first consolidation has used
    the time the second needed (a host slower than the plan's phase seconds): the second does not start, and the
    answer's notes name it."""
    import time

    from suites.sizing.conclude import notes_of

    settings, _, plan, _ = planned_sizing(tmp_path, "sizing.users.light=20", "sizing.users.heavy=5")
    first, second = plan.parts
    assert first.estimate_s > 0 and second.estimate_s > 0  # each part carries its estimate to the executor
    left = first.estimate_s + second.estimate_s / 2  # as if the plan's margin went: only the first fits now
    campaign = campaign_of(settings, plan, started=time.monotonic() - settings.budget_s + left)
    recorder = Recorder(plan.parts[0].comp.cfg, [].append)
    run = CampaignRun(campaign, tmp_path / "run", Nest(recorder, recorder.start_parent("sizing-test", {}),
                                                       launcher="size"))
    ran: list[str] = []
    monkeypatch.setattr(executor, "plan_and_lease", lambda *a, **k: (None, contextlib.nullcontext()))

    def compared(planned, run_dir, out, nest) -> int:  # took its estimate: the deadline comes that much nearer
        ran.append(nest.tags["bench.sizing_part"])
        campaign.deadline -= first.estimate_s
        return 0

    monkeypatch.setattr(executor, "run_comparison", compared)
    monkeypatch.setattr(type(run), "reader", None)  # nothing stored to reuse
    executor.run_parts(run, {}, Console(file=io.StringIO(), width=200))
    assert ran == [first.label] and [p.how for p in run.parts] == ["measured", "skipped"]
    (note,) = notes_of(run)
    assert note.startswith(f"{second.label}: not measured: not started: its estimate {second.estimate_s:.0f} s is "
                           "past the ")
    assert note.endswith("left of sizing.budget_s (a sizing never runs past its budget)")
    assert campaign_of(settings, plan).deadline == math.inf  # no start given: no deadline (a plan, not a run)
