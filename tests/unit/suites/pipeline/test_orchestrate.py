"""Tests of ``suites/pipeline/orchestrate.py``: planning a comparison's phases (running them is tests/e2e's)."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console

from suites.config.compose import compose_run
from suites.config.schema import register_configs
from suites.pipeline.orchestrate import plan_phases
from tests.support.hosts import host


@pytest.mark.heavy
def test_the_phases_of_one_comparison_train_one_stand_in_size(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """gpu-vs-cpu on a GPU host: the GPU phase's stand-in has MNIST's 60,000 images, and so has the CPU phase's
    (planned alone, its placements without a GPU gave 24,000 on cce1a94: a time ratio of different work)."""
    monkeypatch.setenv("BENCH_DATA_ROOT", str(tmp_path / "no-real-data"))
    register_configs()
    comp = compose_run(["scenario=gpu-vs-cpu", "workload=mnist-torch", f"data.cache_dir={tmp_path / 'cache'}",
                        "data.download=false"])
    plans = plan_phases(comp.runs, None, Console(file=io.StringIO()), inv=host(gpus=1, gpu_mem_MiB=143_771.0))
    assert [bool(p.placements[0].gpus) for p in plans] == [True, False]  # 1-gpu, cpu
    sizes = {Path(p.specs[0].data["root"]).name for p in plans}
    assert sizes == {"synthetic-mnist-60000-1000-0"}, sizes
