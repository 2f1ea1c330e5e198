"""make rehearse's judgement (suites/gpucheck/rehearsal.py): the memory counts against each profile's cap, a
campaign that would overrun on the device's clock, a check whose judge missed; the estimates of a slower GPU."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from suites.config import device_file
from suites.gpucheck import campaign
from suites.gpucheck.checks import Row
from suites.gpucheck.rehearsal import REMOVED, Played, data_checks, judge_memory, missed, overrun, removed


def test_the_memory_judge_misses_a_guest_past_its_cap_less_what_a_count_does_not_see():
    assert judge_memory("m60-1q", 684, 230, 1024).ok and not judge_memory("m60-1q", 684, 257, 1024).ok
    dev = device_file.load("h200")
    assert all(c.ok for c in data_checks(dev, 230.0))
    # cce1a94's mnist-torch: ~565 MB of whole-split fp32 temporaries; the H200's m60-1q guest at 2,000 images: 257 MiB
    assert [c.name for c in data_checks(dev, 565.0) if not c.ok] == ["memory within cap: m60-1q"]
    assert [c.name for c in data_checks(dev, 257.0) if not c.ok] == ["memory within cap: m60-1q"]


def played(rows: list[Row], estimates: dict[str, float], budget_s: float = 540) -> Played:
    return Played(rows, {}, estimates, False, "", budget_s, charged=dict(estimates))


def test_a_campaign_the_device_would_not_end_within_its_budget_would_overrun():
    fits = played([Row("a", "ok"), Row("b1", "ok")], {"a": 1, "b1": 20})
    assert overrun(fits) == "" and missed(fits) == []
    late = played([Row("a", "ok"), Row("h", "skipped: not started: its estimate 50 s is past the 9 s left")],
                  {"a": 1, "h": 50}, budget_s=10)
    late.charged.pop("h")  # not started: nothing charged
    assert overrun(late) == "would overrun: the call 0 s on the device's clock, its checks 1 s of it (budget_s=10; " \
                            "the checks' estimates 51 s); not started on the device's clock: h"
    slow = played([Row("a", "ok"), Row("b1", "ok")], {"a": 1, "b1": 20}, budget_s=30)
    slow.device_s = 31.0  # every check started, but the executor's own work between them takes the call past it
    assert overrun(slow) == "would overrun: the call 31 s on the device's clock, its checks 21 s of it " \
                            "(budget_s=30; the checks' estimates 21 s)"
    judged = played([Row("j", "failed: overlap 41 % < 90 %"), Row("k", "inconclusive: host busy")], {"j": 1, "k": 1})
    assert missed(judged) == ["j", "k"]


def test_a_gpu_3x_slower_at_one_pace_works_3x_as_long_at_it_and_the_table_would_overrun(tmp_path: Path):
    h200, measured = campaign.estimates_for(device_file.load("h200"))
    assert not measured and sum(h200.values()) <= campaign.BUDGET_S  # the table fits gpu-check's budget at H200 speed
    dev = json.loads((device_file.DEVICES / "h200.json").read_text())
    for table, keys, pace in (("step_ms", "mnist-torch/", "mnist"), ("frame_ms", "", "frame")):
        slow = tmp_path / f"slow-{pace}.json"
        slow.write_text(json.dumps({**dev, table: {k: 3 * v if k.startswith(keys) else v
                                                   for k, v in dev[table].items()}}))
        slower, _ = campaign.estimates_for(device_file.load(str(slow)))
        paced = [c for c in campaign.PRIORITY if pace in campaign.WORK_S[c]]
        for c in campaign.PRIORITY:  # that pace's work 3x as long; the harness and other paces' work unchanged
            assert slower[c] == pytest.approx(h200[c] + 2 * campaign.WORK_S[c].get(pace, 0.0)), (pace, c)
        assert paced and sum(slower.values()) > sum(h200.values()), pace


def test_a_figure_naming_the_rehearsals_removed_folder_says_it_is_removed():
    """h's figure named /tmp/rehearsal-*/gpu-check/study/.../report.html after the folder was gone."""
    folder = Path("/tmp/rehearsal-abc")
    h = Row("h", "ok", f"{folder}/gpu-check/study/x/report.html (10 s); elsewhere: `python -m suites sync "
                       f"--run-dir {folder}/gpu-check/study/x`")
    shown = removed(played([h, Row("k", f"failed: {folder}/k.log")], {"h": 50, "k": 1}), folder)
    assert shown.rows[0].figure == (f"{REMOVED}/…/report.html (10 s); elsewhere: `python -m suites sync --run-dir "
                                    f"{REMOVED}/…/x`")  # the file by its name: a path folded in a cell is unreadable
    assert shown.rows[1].result == f"failed: {REMOVED}/k.log" and shown.estimates == {"h": 50, "k": 1}
    assert removed(played([Row("a", f"ok: in {folder}; {folder}2/y")], {}), folder).rows[0].result == \
        f"ok: in {REMOVED}; {folder}2/y"  # another folder whose name begins with this one's is not this one
