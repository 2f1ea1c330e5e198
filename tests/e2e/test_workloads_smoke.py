"""Every registered workload runs through ``+preset=smoke`` (generated from the registry, TorchBench-style).

A new plugin under suites/workloads/ is picked up here without touching this
file. Where the host cannot run a workload (no GPU for cuda-probe, no apitrace
for apitrace-replay, no TensorFlow), the test says so by its outcome or skip.
"""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

import pytest

from suites.workloads import list_workloads, workload_class
from tests.support.helpers import SMOKE, run_bench

HAVE_TF = importlib.util.find_spec("tensorflow") is not None


@pytest.mark.parametrize("name", list_workloads())
def test_smoke_experiment_runs_every_workload(tmp_path: Path, name: str):
    plugin = workload_class(name)
    extra: list[str] = []
    if plugin.config_cls.__module__.endswith("keras_models") and not HAVE_TF:
        pytest.skip("TensorFlow is not installed (the tf extra)")
    if name == "apitrace-replay":
        if shutil.which("eglretrace") is None:
            pytest.skip("apitrace is not installed (make setup-system)")
        from suites.workloads.graphics.apitrace import record_replayer

        extra = [f"workload.trace={record_replayer(tmp_path / 'self.trace', ['product'], frames=4)}"]
    run = run_bench(tmp_path, *SMOKE, f"workload={name}", *extra)
    assert run.proc.returncode in (0, 1), run.proc.stderr[-2000:]  # composed, planned, ran: not a config error
    result = run.results["guests"][0]["result"]
    if plugin.gpu_only and run.results["gpu_status"].startswith("no GPU"):  # a device probe: said, recorded
        assert result["status"] == "failed" and "needs a GPU" in result["error"]
        return
    assert run.proc.returncode == 0 and result["status"] == "ok", result.get("error")
    for key, value in plugin.smoke.items():  # the plugin's smoke sizes are what ran
        assert run.results["guests"][0]["spec"]["workload_config"][key] == value, key
