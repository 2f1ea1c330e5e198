"""``make gpu-check`` as a campaign (suites/gpucheck/campaign.py) on a real MLflow store, its checks stood in for
(each records a run into gpu-check's store as a check's command does, in a millisecond): the checks run in priority
order through the campaign executor, a check whose estimate passes what is left of budget_s does not start (said in
its row), each check's runs nest under the gpu-check run tagged with it, the tree is exported, an interrupt leaves
nothing RUNNING, and the summary says every check's seconds."""

from __future__ import annotations

import io
import json
import time
from pathlib import Path

import pytest
from rich.console import Console

from suites.campaign import execute
from suites.config import device_file
from suites.gpucheck import campaign, checks, conclude
from suites.record.store_reader import StoreReader
from tests.support.checks_stood_in import gpu_check, stood_in


@pytest.mark.heavy
def test_the_checks_run_in_priority_order_through_the_executor_nested_and_exported(tmp_path: Path, monkeypatch):
    ran = stood_in(monkeypatch)
    gc = gpu_check(tmp_path, ["b2", "a", "k", "b1"])
    t0 = time.monotonic()
    run = execute(campaign.campaign_of(gc, t0, 520), conclude.concluder(gc, t0), Console(file=io.StringIO()))
    assert ran == ["a", "b1", "b2", "k"] and run.concluded and not run.stopped  # PRIORITY's order, not only='s
    store = StoreReader(f"sqlite:///{tmp_path / 'gc' / 'mlflow.db'}")
    parent = store.run(run.nest.parent.run_id)
    assert parent.status == "FINISHED" and parent.tags["bench.kind"] == "gpu-check"
    assert {c.tags["bench.check_part"] for c in store.children(parent.run_id)} == {"a", "b1", "b2", "k"}
    assert parent.tags["bench.check.b2"] == "ok"
    exported = json.loads((tmp_path / "gc" / "mlflow-export" / "runs.json").read_text())["runs"]
    assert len(exported) == 5  # the gpu-check run and each check's run
    summary = json.loads((tmp_path / "gc" / "summary.json").read_text())
    assert [r["check"] for r in summary["rows"]] == ["a", "b1", "b2", "k"] and set(summary["check_s"]) == set(ran)
    device = json.loads((tmp_path / "gc" / "device.json").read_text())  # a GPU host's gpu-check writes what it measured
    assert set(device["harness_s"]) == set(ran) and not [  # the harness's cost per
        p for p in device_file.problems_of(device) if p.startswith(("check_s", "harness_s"))]
    assert all(c["wall_s"] >= c["harness_s"] >= 0 for c in device["harness_s"].values())  # check, a device file's
    assert summary["estimates"]["shares_s"]["k"] == pytest.approx(520 - (time.monotonic() - t0), abs=30)  # the last


@pytest.mark.heavy
def test_a_check_whose_estimate_passes_what_is_left_does_not_start_and_its_row_says_so(tmp_path: Path, monkeypatch):
    ran = stood_in(monkeypatch)
    gc = gpu_check(tmp_path, ["a", "b1", "k", "h"], {"k": 400.0})
    t0 = time.monotonic()
    run = execute(campaign.campaign_of(gc, t0, 300), conclude.concluder(gc, t0), Console(file=io.StringIO()))
    assert ran == ["a", "b1", "h"]  # k would overrun: not started; h after it still fits, and runs
    rows = {r.check: r.result for r in conclude.rows_of(gc, run)}
    assert rows["k"].startswith("skipped: not started: its estimate 400 s is past the ")
    assert rows["k"].endswith("left of gpu-check.budget_s (a gpu-check never runs past its budget)")


def test_estimates_come_from_the_device_files_measured_check_seconds_where_it_has_them(tmp_path: Path):
    h200 = device_file.of_gpu("NVIDIA H200")  # found by the NVML name gpu-check reads, not a file name
    assert h200 is not None and device_file.of_gpu("NVIDIA A100") is None
    table, measured = campaign.estimates_for(h200)  # the shipped file has no check_s yet
    assert not measured and table == {c: float(s) for c, s in campaign.ESTIMATE_S.items()}
    dev = json.loads((Path(device_file.DEVICES) / "h200.json").read_text())
    mine = tmp_path / "h200.json"
    mine.write_text(json.dumps({**dev, "check_s": {c: 2.0 for c in campaign.PRIORITY}}))
    assert campaign.estimates_for(device_file.load(str(mine))) == ({c: 2.0 for c in campaign.PRIORITY}, True)
    assert campaign.estimates_for(None) == (table, False)  # no file of this GPU: the table at the H200's speed
    assert set(campaign.PRIORITY) == set(checks.CHECKS) == set(campaign.ESTIMATE_S)  # every check ordered, estimated


@pytest.mark.heavy
@pytest.mark.parametrize("pause_s", [0.2, 1.5])
def test_a_rehearsals_device_clock_counts_each_check_as_its_estimate_and_the_executor_at_the_devices_rate(
        tmp_path: Path, pause_s: float):
    """A CI worker beside the rehearsal made its executor slower between checks, and h 'out of time' on the device's
    clock though the device would have reached it: the seconds between checks count as EXECUTOR_S, whatever this
    host's load makes them."""
    from types import SimpleNamespace

    from suites.config import device_file
    from suites.gpucheck.played import StandIn

    gc = gpu_check(tmp_path, ["a", "c1"], {"a": 1.0, "c1": 25.0})
    gc.ctx.stand_in = StandIn(device_file.load("h200"))  # a and c1 are not played: each takes no time here
    stub = SimpleNamespace(campaign=SimpleNamespace(deadline=gc.ctx.deadline), nest=SimpleNamespace(parent=None))
    t0 = time.monotonic()
    campaign.action(gc, "a")(stub)
    time.sleep(pause_s)  # the executor's export, on a quiet or a loaded host
    campaign.action(gc, "c1")(stub)
    device_s = time.monotonic() - t0 - gc.moved_s
    assert device_s == pytest.approx(1.0 + campaign.EXECUTOR_S + 25.0, abs=0.1)
    c1_started_with = gc.ctx.deadline  # the executor's deadline as c1 started: one clock, moved once
    assert c1_started_with == stub.campaign.deadline - (gc.seconds["c1"] - 25.0)


@pytest.mark.heavy
def test_each_check_is_held_to_what_is_left_less_the_estimates_of_the_checks_after_it(tmp_path: Path, monkeypatch):
    """k ran with all that was left of the budget (452 s of 540 in a rehearsal), so h after it started with what k
    had not spent: each check's commands now stop where the checks after it would be starved."""
    stood_in(monkeypatch)
    left: dict[str, float] = {}
    for cid in ("a", "b1", "k"):
        inner = checks.CHECKS[cid]
        def timed(ctx: checks.Context, inner: checks.Check = inner, cid: str = cid) -> checks.Row:
            left[cid] = ctx.left_s  # what the check's commands are timed by, as it starts
            return inner.run(ctx)
        monkeypatch.setitem(checks.CHECKS, cid, checks.Check(cid, inner.title, inner.expected, timed))
    gc = gpu_check(tmp_path, ["a", "b1", "k"], {"a": 1.0, "b1": 100.0, "k": 200.0})
    t0 = time.monotonic()
    execute(campaign.campaign_of(gc, t0, 400), conclude.concluder(gc, t0), Console(file=io.StringIO()))
    assert left["a"] == pytest.approx(100.0, abs=15) and left["b1"] == pytest.approx(200.0, abs=15)
    assert left["k"] == pytest.approx(400.0 - (time.monotonic() - t0), abs=15)  # the last: the rest
    assert gc.shares == pytest.approx({"a": left["a"], "b1": left["b1"], "k": left["k"]}, abs=2)


def test_a_device_file_timing_another_batch_or_way_paces_the_table_as_a_stand_in_plays_it(tmp_path: Path):
    """paces() read only the H200's exact keys: a file that timed MNIST at batch 256, or only compiled, paced
    nothing (1.0), while the rehearsal's stand-ins played that file's step."""
    dev = json.loads((device_file.DEVICES / "h200.json").read_text())
    assert campaign.paces(dev) == {"mnist": 1.0, "cifar": 1.0, "frame": 1.0, "kernels": 1.0}
    half_batch = {**dev, "step_ms": {"mnist-torch/256/eager": 4.414, **{k: v for k, v in dev["step_ms"].items()
                                                                      if not k.startswith("mnist")}}}
    assert campaign.paces(half_batch)["mnist"] == pytest.approx(2.0)  # 256 images in 4.414 ms: 512 in twice that
    compiled = {**dev, "step_ms": {"mnist-torch/512/compile=default": 2.207}}
    assert campaign.paces(compiled) == {"mnist": pytest.approx(0.5), "cifar": 1.0, "frame": 1.0, "kernels": 1.0}
