"""A check on the device's clock (suites/gpucheck/device_clock.py): its work read from the runs it wrote, the
harness the rest; a rehearsal's charge (the device's harness cost where measured, else this host's); each check's
share of the budget; and a device file's measured seconds, checked as data."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from suites.config import device_file
from suites.gpucheck.device_clock import CheckClock, charge, clock_of, results_under, share_end, windows_of
from suites.gpucheck.rehearsal import Played, over_share, overrun


def write_run(folder: Path, windows: list[list[list[float]]]) -> Path:
    """A results.json whose guests had these timed windows (epoch s)."""
    folder.mkdir(parents=True)
    doc = {"guests": [{"result": {"windows": w}} for w in windows]}
    (folder / "results.json").write_text(json.dumps(doc))
    return folder / "results.json"


def test_a_runs_work_is_its_guests_windows_first_start_to_last_end():
    assert windows_of({"guests": [{"result": {"windows": [[10.0, 12.0], [13.0, 14.5]]}},
                                  {"result": {"windows": [[11.0, 15.0]]}}]}) == (10.0, 15.0)
    for hostile in (None, [], {"guests": "x"}, {"guests": [{"result": {"windows": [["a", 1]]}}]},
                    {"guests": [{"result": {"windows": [[5.0, 1.0]]}}]}):  # a window that ends before it starts
        assert windows_of(hostile) is None


def test_a_checks_work_counts_only_the_runs_it_wrote_and_its_harness_is_the_rest(tmp_path: Path):
    write_run(tmp_path / "runs" / "b1", [[[100.0, 103.0]]])  # an earlier check's
    before = results_under(tmp_path)
    write_run(tmp_path / "runs" / "i" / "gpu-r1", [[[200.0, 201.5]]])
    write_run(tmp_path / "study" / "x" / "cpu-r1", [[[203.0, 205.0]], [[204.0, 206.0]]])  # two guests: one span
    write_run(tmp_path / "runs" / "i" / "failed", [])  # a run that timed nothing
    write_run(tmp_path / "mlartifacts" / "1" / "abc" / "artifacts", [[[200.0, 201.5]]])  # the store's copy of one
    write_run(tmp_path / "mlflow-export" / "abc", [[[200.0, 201.5]]])  # and the export's
    (tmp_path / "runs" / "i" / "torn").mkdir()
    (tmp_path / "runs" / "i" / "torn" / "results.json").write_text("{not json")  # unreadable: no work seen
    clock = clock_of(tmp_path, before, started=199.0, wall_s=10.0)
    assert clock == CheckClock(10.0, 4.5, 2, 1.0)
    assert clock.harness_s == 5.5 and clock.as_json()["harness_s"] == 5.5
    assert clock_of(tmp_path, results_under(tmp_path), 0.0, 3.0) == CheckClock(3.0, 0.0, 0, None)


def test_a_charge_is_the_work_here_plus_the_devices_harness_cost_where_it_measured_one():
    here = CheckClock(wall_s=40.0, work_s=12.0, runs=6, first_window_s=5.0)
    assert charge(here, None) == (40.0, "this host's")  # no gpu-check on the GPU yet: this host's harness
    assert charge(here, {"wall_s": 20.0, "work_s": 12.0, "harness_s": 8.0}) == (20.0, "the device's")
    assert charge(here, {"harness_s": "8"}) == (40.0, "this host's")  # a figure that is no number is not taken


def test_a_checks_share_is_what_is_left_less_the_estimates_of_the_checks_after_it():
    estimates = {"a": 10.0, "b": 30.0, "c": 20.0}
    assert share_end(100.0, 0.0, "a", ["a", "b", "c"], estimates) == 50.0  # b and c keep their 50 s
    assert share_end(100.0, 70.0, "b", ["a", "b", "c"], estimates) == 100.0  # a ran long: b still gets its own
    assert share_end(100.0, 0.0, "c", ["a", "b", "c"], estimates) == 100.0  # the last: the rest of the budget
    assert share_end(100.0, 0.0, "b", ["b"], estimates) == 100.0  # only= one check


def test_a_check_past_its_share_on_the_devices_clock_would_overrun_and_says_both_figures():
    played = Played([], {}, {"i": 30.0, "k": 100.0}, False, "", 540, 300.0, {"i": 93.4, "k": 60.0}, {},
                    {"i": 50.0, "k": 120.0})
    assert over_share(played) == ["i 93 s of 50 s"]
    assert overrun(played).endswith("; past their share of it: i 93 s of 50 s")
    played.charged["i"] = 50.9  # within the clocks' rounding
    assert overrun(played) == ""


@pytest.mark.parametrize("field, value", [
    ("check_s", {"b1": "9"}), ("check_s", {"../x": 9.0}), ("check_s", {"b1": -1.0}), ("check_s", []),
    ("harness_s", {"b1": {"wall_s": 9.0, "work_s": 3.0}}), ("harness_s", {"b1": 9.0}),
    ("harness_s", {"b1": {"wall_s": 9.0, "work_s": 3.0, "harness_s": float("nan")}})])
def test_a_device_files_measured_seconds_are_data_checked_in_one_line(tmp_path: Path, field: str, value: object):
    dev = json.loads((device_file.DEVICES / "h200.json").read_text())
    assert device_file.problems_of({**dev, "check_s": {"b1": 9.0},
                                    "harness_s": {"b1": {"wall_s": 9.0, "work_s": 3.0, "harness_s": 6.0}}}) == []
    problems = device_file.problems_of({**dev, field: value})
    assert len(problems) == 1 and problems[0].startswith(f"{field} must map check names"), problems


def mnist_result(images_per_s: float) -> dict[str, object]:
    """b1's results.json as far as a device file reads it: one mnist-torch guest at batch 512, eager."""
    return {"guests": [{"result": {"metrics": {"images_per_sec": images_per_s}, "info": {}},
                        "spec": {"workload": "mnist-torch", "workload_config": {"batch_size": 512}}}]}


def test_a_gpu_without_measured_seconds_plans_the_checks_left_at_the_pace_its_first_checks_measured(tmp_path: Path):
    """An H100 has no device file: gpu-check planned every check at the H200's pace; once b1 measured an MNIST step
    3x as long, the checks not yet run are planned at it (i's MNIST work twice more), and it says so."""
    from types import SimpleNamespace

    from suites.campaign.spec import CampaignPart
    from suites.gpucheck import campaign
    from suites.gpucheck.campaign import GpuCheck
    from suites.gpucheck.checks import Context
    from tests.support.hosts import gpu_host

    said: list[str] = []
    table, _ = campaign.estimates_for(None)
    ctx = Context(tmp_path, gpu_host("NVIDIA H100 80GB HBM3", 81_559.0), None, 1e9, said.append)
    gc = GpuCheck(ctx, ["b1", "i", "a"], dict(table), measured=False, seconds={"b1": 9.0})
    parts = [CampaignPart(c, None, {}, table[c]) for c in ("b1", "i", "a")]  # type: ignore[arg-type]
    run = SimpleNamespace(campaign=SimpleNamespace(parts=parts))
    ctx.results["b1-mnist"] = mnist_result(1000.0 * 512 / (3 * 4.414))  # 3x the H200's 4.414 ms step
    campaign.replan(gc, run)  # type: ignore[arg-type]
    i = table["i"] + 2 * campaign.WORK_S["i"]["mnist"]
    assert [p.estimate_s for p in parts] == [table["b1"], i, table["a"]]  # b1 ran; a does no work
    assert gc.estimates["i"] == i
    assert said == [f"gpu-check: the checks left planned anew at this GPU's measured pace (the H200's = 1: mnist "
                    f"3.00x, cifar 1.00x, frame 1.00x): i {i:.0f} s"]
    gc.measured = True  # its device file's measured seconds: kept
    parts[1].estimate_s = 1.0
    campaign.replan(gc, run)  # type: ignore[arg-type]
    assert parts[1].estimate_s == 1.0


def test_a_gpus_first_device_file_is_written_under_its_model_and_never_replaces_one(tmp_path: Path, monkeypatch):
    assert device_file.name_for("NVIDIA H100 80GB HBM3") == "h100" and device_file.name_for("NVIDIA H200") == "h200"
    assert device_file.name_for("NVIDIA A100-SXM4-80GB") == "a100-sxm4-80gb"
    shipped = json.loads((device_file.DEVICES / "h200.json").read_text())
    monkeypatch.setattr(device_file, "DEVICES", tmp_path)
    (tmp_path / "h200.json").write_text(json.dumps(shipped))
    h100 = {**shipped, "gpu": "NVIDIA H100 80GB HBM3", "mem_total_MiB": 81_559.0, "source": "make gpu-check on it"}
    assert device_file.first_of(h100) == tmp_path / "h100.json"
    assert json.loads((tmp_path / "h100.json").read_text()) == h100
    assert device_file.first_of({**h100, "source": "again"}) is None  # one is there now: never replaced by a run
    assert device_file.first_of({**shipped, "source": "a second H200"}) is None  # the H200 has its file
    assert device_file.first_of({**h100, "gpu": "NVIDIA L4", "cuda_context_MiB": None}) is None  # not a device file
    assert not (tmp_path / "l4.json").exists()


def test_a_device_file_written_meanwhile_by_another_gpu_check_is_kept_and_nothing_half_written_is_left(
        tmp_path: Path, monkeypatch):
    shipped = json.loads((device_file.DEVICES / "h200.json").read_text())
    h100 = {**shipped, "gpu": "NVIDIA H100 80GB HBM3", "mem_total_MiB": 81_559.0, "source": "this one"}
    monkeypatch.setattr(device_file, "DEVICES", tmp_path)
    checked = device_file.problems_of

    def another_writes_first(made):  # between this gpu-check's look and its write
        (tmp_path / "h100.json").write_text('{"source": "the other"}')
        return checked(made)

    monkeypatch.setattr(device_file, "problems_of", another_writes_first)
    assert device_file.first_of(h100) is None
    assert json.loads((tmp_path / "h100.json").read_text()) == {"source": "the other"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["h100.json"]
