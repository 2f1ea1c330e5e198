"""``python -m suites size`` on a site's fleet (backend=ray ray.placement=per-node): two real Ray nodes standing in
for two GRID M60-4Q vGPU VMs (NVML replayed from a recorded vGPU guest's trace on each), stated to share one
physical GPU. The sizing measures what two nodes can place (one CAD guest beside the ML guest), says why it went no
further and why the other profiles were not measured, and its provenance names each node and its profile."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from gpu_probe.trace import TRACE_ENV
from suites.render.tables import unfold
from tests.support.helpers import REPO, store_at
from tests.support.raynodes import HEAD_IP, WORKER_IP, NamespaceCluster, in_ns
from tests.support.stores import mlflow_runs

TRACE = REPO / "tests" / "traces" / "m60-4q-vgpu-guest.json"


# the nodes' GPUs are recordings: the ML guest trains on their CPUs (and is labelled not enforced for it)
ML_ON_CPU = ("scenario.mixed.ml.overrides=['workload.train_limit=12000','workload.warmup_steps=3',"
             "'workload.batch_size=128','workload.target_accuracy=null','workload.until_stopped=true',"
             "'workload.allow_cpu_fallback=true']")


@pytest.fixture(scope="module")
def two_4q_nodes():
    c = NamespaceCluster(head_env={TRACE_ENV: str(TRACE)}, worker_env={TRACE_ENV: str(TRACE)})
    c.start()
    yield c.nodes
    c.stop()


@pytest.mark.slow(minutes=2)  # its module goes first (tests/conftest.py)
def test_a_sizing_on_a_fleet_measures_what_its_nodes_place_and_names_each_node_and_profile(tmp_path: Path,
                                                                                          two_4q_nodes):
    uri = store_at(tmp_path / "mlflow.db")
    args = [sys.executable, "-m", "suites", "size", "backend=ray", "ray.placement=per-node",
            f"ray.address={two_4q_nodes['address']}", f"+ray.gpu_groups.gpu0=[{HEAD_IP},{WORKER_IP}]", ML_ON_CPU,
            "sizing.repeats=1", "progress=quiet", f"tracking_uri={uri}", f"artifact_dir={tmp_path / 'art'}",
            f"data.cache_dir={tmp_path / 'data'}", f"sizing.out_dir={tmp_path / 'out'}"]
    proc = subprocess.run(in_ns(two_4q_nodes["ns"], *args), cwd=REPO, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "BENCH_DATA_ROOT": str(tmp_path / "none")})
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    said = unfold(proc.stdout)
    assert "size: Tesla M60: 5 candidate profile(s), 1 consolidation(s) (m60-4q/timeslice), sizes full, 1 " \
           "repeat(s) per count, on a fleet of 2 node(s)" in said
    assert ("not a GPU sizing: the fleet's guests ran on their nodes' CPUs (their NVML replayed from recordings); "
            "profiles not enforced") in said
    assert "m60-4q: measured to 1 CAD guest(s) per GPU: the fleet has 2 node(s) of it" in said
    assert "m60-8q: not measured: no node of the fleet is one" in said
    assert "policy mps: skipped on a fleet" in said and "peak GPU memory not measured (the fleet's NVML is a " \
        "recording)" in said
    (sizing,) = [r for r in mlflow_runs(uri) if r.data.tags.get("bench.kind") == "sizing"]
    params = sizing.data.params
    assert params["provenance.fleet"].startswith("2 node(s): ")
    assert params["provenance.fleet"].count(": GRID M60-4Q (physical GPU gpu0, stated)") == 2
    assert HEAD_IP in params["provenance.fleet"] and WORKER_IP in params["provenance.fleet"]
    assert params["provenance.GPU"] == "GRID M60-4Q" and params["provenance.sized for"] == "Tesla M60"
    assert params["provenance.vGPU scheduler"].startswith("not exposed in the VM")
    assert params["provenance.NVML"].startswith("replayed from recorded traces on 2 node(s)")
    assert params["validity"] == "not enforced"
    # one repeat a step gives no interval: the sizing is inconclusive, said, and records no count (issue 62)
    assert {k: v for k, v in sizing.data.metrics.items() if not k.startswith("harness.")} == {"inconclusive": 1.0}
    assert "1 repeat(s) at 1 CAD guest(s): no interval" in sizing.data.tags["bench.inconclusive"]
    (folder,) = (tmp_path / "out").iterdir()
    md = (folder / "sizing.md").read_text()
    assert "| m60-4q | 1..1 |" in md and "## m60-4q: the counts" in md and "- fleet: 2 node(s): " in md
