"""Comparison scenarios: phases composed like command lines, normalised to a baseline, recorded nested."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from suites.config.scenario import PhaseConfig
from tests.support.helpers import SMOKE, run_bench, runs_of

TWO_RANKS = ('scenario.phases=[{label:1-rank,overrides:["profile=passthrough-1gpu","workload.ranks=0"]},'
             '{label:2-ranks,overrides:["profile=passthrough-2gpu","workload.ranks=0"]}]')


def test_two_cpu_ranks_scale_and_the_comparison_is_recorded(tmp_path: Path):
    run = run_bench(tmp_path, *SMOKE, "scenario=scaling", "profile.vcpus=2", TWO_RANKS, "scenario.baseline=1-rank",
                    "workload.max_steps=null", "workload.epochs=4", "workload.size_by=work")
    assert run.proc.returncode == 0, run.proc.stderr[-2000:]
    rows = list(csv.DictReader((run.run_dir / "comparison.csv").open()))
    assert [r["label"] for r in rows] == ["1-rank", "2-ranks"]
    assert all(float(r["images_per_sec"]) > 0 for r in rows) and float(rows[0]["throughput_x"]) == 1.0
    two = json.loads((run.run_dir / "2-ranks" / "results.json").read_text())["guests"][0]["result"]
    assert two["info"]["ranks"] == 2 and two["metrics"]["images"] == 4 * 2048  # both shards, every epoch
    assert two["metrics"]["steps"] == 4 * 8  # 1024 images per rank / 128 per batch, 4 epochs

    import mlflow

    mlflow.set_tracking_uri(run.tracking_uri)
    df = mlflow.search_runs(experiment_names=["gpu-mixed-bench"])
    comparison = df[df["tags.bench.role"] == "comparison"]
    assert len(comparison) == 1
    cid = comparison.iloc[0]["run_id"]
    assert comparison.iloc[0]["metrics.2-ranks.images_per_sec"] > 0
    phases, guests = runs_of(run.tracking_uri)
    assert sorted(phases["tags.bench.phase"]) == ["1-rank", "2-ranks"]
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
