"""ray.placement=per-node on two real Ray nodes standing in for a site's vGPU VMs.

The head node answers NVML from a recorded ``GRID M60-8Q`` vGPU guest trace, the
worker from a ``GRID M60-4Q`` one (chosen per node by ``GPU_PROBE_NVML_TRACE`` in
the node's environment, which its agent reads). The worker's clock runs 30 s
ahead, as an unsynchronised VM's would: what it stamps must land on the runner's
clock. Linux has no namespace for the wall clock and libfaketime breaks Python's
timed waits (EINVAL from time.sleep, Event.wait hangs), so the shift is a
``sitecustomize`` on the worker node's PYTHONPATH that moves ``time.time`` of
every Python process there (its actors, their guests) 30 s ahead.
"""

from __future__ import annotations

import csv
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from gpu_probe.trace import TRACE_ENV
from tests.support.helpers import REPO, SMOKE, TRACES, BenchRun, bench_args
from tests.support.raynodes import HEAD_IP, WORKER_IP, NamespaceCluster, in_ns
from tests.support.record_keys import GOLDEN, assert_keeps, keys_of
from tests.support.stores import mlflow_runs

SHIFT_S = 30.0


SHIFTED_CLOCK = f"""import time

_time, _time_ns = time.time, time.time_ns
time.time = lambda: _time() + {SHIFT_S}
time.time_ns = lambda: _time_ns() + {int(SHIFT_S * 1e9)}
"""


IDLE = ["scenario=single", "workload=idle", "workload.seconds=4", "profile.memory_MiB=1024", "profile.vcpus=1"]


@pytest.fixture(scope="module")
def fleet_cluster(tmp_path_factory: pytest.TempPathFactory):
    site = tmp_path_factory.mktemp("shifted-clock")
    (site / "sitecustomize.py").write_text(SHIFTED_CLOCK)
    path = os.pathsep.join(p for p in (str(site), os.environ.get("PYTHONPATH", "")) if p)
    shifted = {"PYTHONPATH": path}
    c = NamespaceCluster(head_env={TRACE_ENV: str(TRACES / "m60-8q-vgpu-guest.json")},
                         worker_env={TRACE_ENV: str(TRACES / "m60-4q-vgpu-guest.json"), **shifted})
    c.start()
    yield c.nodes
    c.stop()


def per_node(nodes: dict, tmp_path: Path, *overrides: str) -> BenchRun:
    args, run_dir, uri = bench_args(tmp_path, *SMOKE, "backend=ray", "ray.placement=per-node",
                                    f"ray.address={nodes['address']}", *overrides)
    proc = subprocess.run(in_ns(nodes["ns"], *args), cwd=REPO, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "BENCH_DATA_ROOT": str(tmp_path / "none")})
    return BenchRun(proc, run_dir, uri)


def samples(run_dir: Path) -> list[dict[str, str]]:
    with (run_dir / "samples.csv").open() as f:
        return list(csv.DictReader(f))


def rows_while_training(run: BenchRun, rows: list[dict[str, str]]) -> list[dict[str, str]]:
    """The runner's rows while the (only) guest trained, by its interval on the runner's clock."""
    res = run.results
    start, end = res["guests"][0]["result"]["t_train_start"], res["guests"][0]["result"]["t_train_end"]
    return [r for r in rows if start + 0.5 <= res["sampler"]["t0"] + float(r["t_s"]) <= end - 0.5]


def test_two_m60_8q_guests_are_refused_naming_both_nodes_gpus(tmp_path: Path, fleet_cluster):
    run = per_node(fleet_cluster, tmp_path, "profile=m60-8q", "scenario=concurrent", "workload=idle")
    lines = [ln for ln in run.proc.stderr.splitlines() if ln.startswith("error:")]
    assert run.proc.returncode == 2 and len(lines) == 1, run.proc.stderr[-2000:]
    assert re.fullmatch(rf"error: profile m60-8q needs 2 node\(s\) with a GRID M60-8Q \(ray.placement=per-node: one "
                        rf"guest per node\); the cluster has 1 \(\S+@{HEAD_IP}\), and 1 with GRID M60-4Q "
                        rf"\(\S+@{WORKER_IP}\)", lines[0]), lines[0]
    assert not run.run_dir.exists()


def test_an_m60_8q_guest_runs_on_the_8q_node_enforced_with_its_gpu_series(tmp_path: Path, fleet_cluster):
    run = per_node(fleet_cluster, tmp_path, "profile=m60-8q", *IDLE, f"+ray.gpu_groups.gpu0=['{HEAD_IP}']")
    assert run.proc.returncode == 0, run.proc.stdout[-2000:] + run.proc.stderr[-2000:]
    (g,) = run.results["guests"]
    assert f"({HEAD_IP})" in g["placement"]["node"] and g["validity"] == "enforced"
    assert "on physical GPU gpu0, no other guest of this run on it (stated in ray.gpu_groups, not seen)" in\
        g["placement"]["note"]
    assert g["placement"]["reason"].startswith("hypervisor: GRID M60-8Q seen in the VM; NVML replayed from ")
    rows = samples(run.run_dir)
    util = [float(r["g0.gpu0.util_pct"]) for r in rows_while_training(run, rows) if r.get("g0.gpu0.util_pct")]
    # the node's rows join the runner's while the guest trains (a row may miss one on a loaded host: a gap, never
    # another time's figure); the values are the trace's, not the runner host's
    during = rows_while_training(run, rows)
    assert len(util) >= 0.5 * len(during) and set(util) <= set(range(55, 85)) and len(set(util)) > 1
    assert all(not r.get("g0.gpu0.power_W") for r in rows)  # a vGPU guest's NVML has none: empty, never 0
    assert g["sampled"]["gpu0.mem_used_MiB.max"] > 512 and g["sampled"]["sampler_cpu_pct"] >= 0
    notes = run.results["sampler"]["notes"]
    assert any("g0: the NVML answers on its node were replayed from" in n for n in notes), notes
    assert any("g0: its GPU (on its node) does not expose power" in n for n in notes), notes
    (guest_run,) = [r for r in mlflow_runs(run.tracking_uri) if r.data.tags.get("bench.role") == "guest"]
    assert 55 <= guest_run.data.metrics["gpu0.util_pct.mean"] <= 84
    assert "sampler_cpu_pct" in guest_run.data.metrics


def test_a_per_node_run_records_every_key_a_local_run_does(tmp_path: Path, fleet_cluster):
    """The golden key sets of a local smoke run (tests/golden/record_keys.json), all recorded by a remote guest."""
    run = per_node(fleet_cluster, tmp_path, "profile=m60-8q", "profile.memory_MiB=1024", "profile.vcpus=1",
                   "workload.allow_cpu_fallback=true")  # the node's GPU is a recording: the guest trains on the CPU
    assert run.proc.returncode == 0, run.proc.stdout[-2000:] + run.proc.stderr[-2000:]
    assert_keeps(json.loads(GOLDEN.read_text())["single"], keys_of(run))


def test_a_node_whose_clock_is_off_is_put_on_the_runners_clock(tmp_path: Path, fleet_cluster):
    run = per_node(fleet_cluster, tmp_path, "profile=m60-4q", *IDLE)
    assert run.proc.returncode == 0, run.proc.stdout[-2000:] + run.proc.stderr[-2000:]
    res = run.results
    (g,) = res["guests"]
    assert f"({WORKER_IP})" in g["placement"]["node"]
    found = re.search(r"clock offset ([+-][\d.]+) ms ± ([\d.]+) \(n=(\d+)\)", g["placement"]["note"])
    assert found, g["placement"]["note"]
    offset_ms, residual_ms = float(found[1]), float(found[2])
    assert abs(offset_ms - SHIFT_S * 1e3) <= residual_ms + 0.1, (offset_ms, residual_ms)  # + the note's rounding
    start, end = g["result"]["t_train_start"], g["result"]["t_train_end"]
    assert res["started_at"] <= start < end <= res["ended_at"]  # uncorrected, both would be 30 s in the future
    assert 3.9 <= end - start <= 6
    during = rows_while_training(run, samples(run.run_dir))
    joined = [float(r["g0.gpu0.util_pct"]) for r in during if r.get("g0.gpu0.util_pct")]
    assert len(joined) >= 0.5 * len(during) > 10  # uncorrected, not one node row is within a period of the runner's
    assert set(joined) <= set(range(25, 55))


def test_the_study_on_the_fleet_plans_with_its_gpus_and_skips_parts_by_what_the_nodes_are(tmp_path: Path,
                                                                                            fleet_cluster):
    """Two vGPU VMs (one 8Q, one 4Q): no node is a passthrough GPU or holds two guests of one profile, so every part
    is skipped, each with what the cluster offers, and nothing starts."""
    cmd = [sys.executable, "-m", "suites.study.command", f"study.out_dir={tmp_path / 'study'}", "study.repeats=1",
           f"tracking_uri=sqlite:///{tmp_path / 'mlflow.db'}", f"artifact_dir={tmp_path / 'artifacts'}",
           f"data.cache_dir={tmp_path / 'data'}", "progress=quiet", "backend=ray", "ray.placement=per-node",
           f"ray.address={fleet_cluster['address']}"]
    proc = subprocess.run(in_ns(fleet_cluster["ns"], *cmd), cwd=REPO, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "BENCH_DATA_ROOT": str(tmp_path / "none")})
    assert f"Ray cluster at {fleet_cluster['address']}: 2 GPU(s) on 2 node(s), ray.placement=per-node" in proc.stdout,\
        proc.stdout[-2000:]
    errors = [ln for ln in proc.stderr.splitlines() if ln.startswith("error:")]
    assert proc.returncode == 2 and len(errors) == 1, proc.stderr[-3000:]
    assert errors[0].startswith("error: nothing of the study can run on this host: ")
    assert "gpu-vs-cpu: does not fit this host: phase 1-gpu: profile passthrough-1gpu needs 1 node(s) with a GPU"\
        in errors[0], errors[0]
    assert "needs 2 node(s) with a GRID M60-8Q" in errors[0] and "1 with GRID M60-4Q" in errors[0]
    assert not (tmp_path / "study").exists() or not any((tmp_path / "study").iterdir())


def test_a_sizing_on_a_fleet_with_one_node_per_profile_is_refused_naming_each_nodes_profile(tmp_path: Path,
                                                                                            fleet_cluster):
    """A count needs a CAD guest's node and the ML guest's: one 8Q and one 4Q node measure nothing, said in one line
    before anything is written."""
    args = [sys.executable, "-m", "suites", "size", "backend=ray", "ray.placement=per-node",
            f"ray.address={fleet_cluster['address']}", f"tracking_uri=sqlite:///{tmp_path / 'm.db'}",
            f"sizing.out_dir={tmp_path / 'out'}"]
    proc = subprocess.run(in_ns(fleet_cluster["ns"], *args), cwd=REPO, capture_output=True, text=True, timeout=300)
    lines = [ln for ln in proc.stderr.splitlines() if ln.startswith("error:")]
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr[-2000:]
    assert re.fullmatch(rf"error: size: no candidate profile can be measured on this fleet: m60-8q: not measured: "
                        rf"the fleet has 1 node of it \(\S+@{HEAD_IP}\); a count needs 2 \(a CAD guest and the ML "
                        rf"guest, one node each\); m60-4q: not measured: the fleet has 1 node of it "
                        rf"\(\S+@{WORKER_IP}\); .*m60-0q: not measured: no node of the fleet is one", lines[0]),\
        lines[0]
    assert not (tmp_path / "out").exists() and not (tmp_path / "m.db").exists()
