"""Comparison scenarios: phases composed like command lines, normalised to a baseline, recorded nested."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from suites.config.scenario import PhaseConfig
from suites.render.tables import unfold
from tests.support.helpers import SMOKE, run_bench, runs_of


@pytest.mark.slow(minutes=2)  # its module goes first (tests/conftest.py)
def test_the_scaling_scenario_trains_at_one_two_and_four_ranks_and_the_comparison_is_recorded(tmp_path: Path):
    """The reference study's scaling (1, 2 and 4 GPUs, a rank per GPU) on this host's CPU ranks, each phase a fixed
    work (4 epochs of the smoke set's 2,048 images): every rank's shard counted, a rate its timed steps cannot carry
    blank and said why, the phases nested under one comparison, and labelled what they are (one test of rank counts:
    2 ranks were a test of their own, merged)."""
    run = run_bench(tmp_path, *SMOKE, "scenario=scaling", "profile.vcpus=2", "workload.max_steps=null",
                    "workload.epochs=4", "workload.size_by=work")
    assert run.proc.returncode == 0, run.proc.stderr[-2000:]
    out = run.proc.stdout
    assert "NOT A GPU MEASUREMENT: every phase" in out and "no spread" in out
    # every phase on the CPU: the study's GPU figures are not shown beside this host's CPU ratios
    assert "images/s 3.74x" not in out and "note: all 3 phases on the CPU: not a multi-GPU scaling comparison" in out
    rows = list(csv.DictReader((run.run_dir / "comparison.csv").open()))
    assert [r["label"] for r in rows] == ["1-gpu", "2-gpu", "4-gpu"]
    assert float(rows[0]["images_per_sec"]) > 0 and float(rows[1]["images_per_sec"]) > 0
    assert float(rows[0]["throughput_x"]) == 1.0
    # a rank of 4 takes 16 steps, 11 of them timed (after its warm-up): too few to carry a rate, so blank, said why
    assert rows[2]["images_per_sec"] == rows[2]["throughput_x"] == "" and rows[2]["status"] == "ok"
    for label, ranks in (("1-gpu", 1), ("2-gpu", 2), ("4-gpu", 4)):
        guest = json.loads((run.run_dir / label / "results.json").read_text())["guests"][0]
        result = guest["result"]
        assert result["status"] == "ok" and result["info"].get("ranks", 1) == ranks, (label, result)
        assert guest["spec"]["workload_config"]["ranks"] == ranks and guest["validity"] == "not enforced"
        assert result["metrics"]["images"] == 4 * 2048  # every rank's shard, every epoch
        assert result["metrics"]["steps"] == 4 * 2048 // ranks // 128  # a rank's shard / 128 per batch, 4 epochs
    assert result["info"]["images_per_sec_blank"] == "11 timed steps < 20"  # the 4 ranks' guest

    import mlflow

    mlflow.set_tracking_uri(run.tracking_uri)
    df = mlflow.search_runs(experiment_names=["gpu-mixed-bench"])
    comparison = df[df["tags.bench.role"] == "comparison"]
    assert len(comparison) == 1
    cid = comparison.iloc[0]["run_id"]
    assert comparison.iloc[0]["metrics.2-gpu.images_per_sec"] > 0
    # round 7: the comparison's own run id was printed nowhere, and publishing the last printed id bundled one phase
    assert unfold(out).rstrip().splitlines()[-1] == (f"comparison: run {cid}: publish this one (make publish "
                                                     f"RUN={cid}); the 'mlflow: run' lines above are its phases'")
    phases, guests = runs_of(run.tracking_uri)
    assert sorted(phases["tags.bench.phase"]) == ["1-gpu", "2-gpu", "4-gpu"]
    assert set(phases["tags.mlflow.parentRunId"]) == {cid}
    assert set(guests["tags.mlflow.parentRunId"]) == set(phases["run_id"])


@pytest.mark.parametrize("overrides,expected", [
    (["scenario=gpu-vs-cpu", "scenario.baseline=nope"], "scenario.baseline: 'nope' is not a phase label"),
    (["scenario=gpu-vs-cpu", 'scenario.phases=[{label:x,overrides:["profile=m60-3q"]}]', "scenario.baseline=x"],
     "phase x: In 'config': Could not find 'profile/m60-3q'"),
    (["scenario=gpu-vs-cpu", 'scenario.phases=[{label:x,overrides:["scenario=single"]}]', "scenario.baseline=x"],
     "cannot change the scenario"),
    (["scenario=multi-guest", "profile.vcpus=4096"], "phase 1x4gpu: 1 guest(s) x 4096 vCPUs"),
])
def test_bad_phases_fail_before_anything_runs(tmp_path: Path, overrides: list, expected: str):
    run = run_bench(tmp_path, *overrides, fresh_store=True)
    lines = run.proc.stderr.strip().splitlines()
    assert run.proc.returncode == 2 and len(lines) == 1 and expected in lines[0], run.proc.stderr
    assert not list(run.run_dir.glob("**/g*.log")) and not (tmp_path / "mlflow.db").exists()
    assert not run.run_dir.exists(), "a run that never started left a run directory"
    assert PhaseConfig("x").overrides == []


def test_one_guest_with_four_gpus_trains_one_rank_per_gpu(tmp_path: Path):
    from gpu_probe.inventory import Inventory
    from suites.config.compose import compose_run
    from suites.config.schema import register_configs
    from suites.run.plan import plan

    register_configs()
    comp = compose_run(["scenario=multi-guest", "profile.vcpus=1", "profile.memory_MiB=1024",
                        "scenario.cpu_overcommit=true", f"data.cache_dir={tmp_path / 'data'}"])
    four = Inventory("h", "Linux", "3.11", "cpu", 8, 8, 8, 65536.0,
                     gpus=[{"index": i, "name": "Tesla M60", "uuid": f"GPU-{i}", "mem_total_MiB": 8192.0}
                           for i in range(4)])
    one_by_four, four_by_one = (plan(run, four) for run in comp.runs[:2])
    assert one_by_four.specs[0].gpus == ["GPU-0", "GPU-1", "GPU-2", "GPU-3"]
    assert one_by_four.specs[0].workload_config["ranks"] == 4  # the profile's GPUs, not 1 of 4
    assert [s.workload_config["ranks"] for s in four_by_one.specs] == [1, 1, 1, 1]
