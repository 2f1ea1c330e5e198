"""backend=ray across two real Ray nodes on this host: a head and a worker, each its own raylet.

Both nodes and the runner live in a network namespace of their own (only its
loopback, addresses 127.0.0.2 and 127.0.0.3): Ray in multi-node mode listens
on every interface, and in there that is nothing but the test's own loopback.
Each node declares one CPU and one logical GPU, so the two guests of a
scenario cannot both fit on one node and land on both. The worker also runs in
a private mount namespace where one folder (``hidden``) is an empty tmpfs: a
data root there exists on the head only, as on a cluster without a shared
filesystem. Nothing is left behind: the fixture checks for processes,
listening sockets, the namespace and the temp folder once the nodes are stopped.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import psutil
import pytest

from suites.backends.ray.package import SUITE_PACKAGES
from tests.support.helpers import REPO, SMOKE, BenchRun, bench_args, wait_while_running
from tests.support.raynodes import HEAD_IP, WORKER_IP, NamespaceCluster, in_ns, pgid, stop_node

M60_4Q = ["profile=m60-4q", "profile.memory_MiB=1024", "profile.vcpus=1"]


CPU_FALLBACK = "workload.allow_cpu_fallback=true"  # the nodes' GPUs are logical: the guests train on the CPU


def hide(nodes: dict) -> list[str]:
    """The worker's wrap: a private mount namespace where ``hidden`` is an empty tmpfs."""
    return ["unshare", "--mount", "--propagation", "private", "sh", "-c",
            f'mount -t tmpfs tmpfs {nodes["hidden"]} && exec "$0" "$@"']


@pytest.fixture(scope="module")
def cluster():
    c = NamespaceCluster(worker_wrap=hide)
    c.start()
    yield c
    c.stop()


@pytest.fixture(scope="module")
def two_nodes(cluster):
    return cluster.nodes


def bench_in(nodes: dict, tmp_path: Path, *overrides: str, timeout: float = 600) -> BenchRun:
    """The bench CLI, run inside the cluster's network namespace (the only place its addresses exist)."""
    args, run_dir, uri = bench_args(tmp_path, *SMOKE, "scenario=concurrent", *M60_4Q, CPU_FALLBACK, "backend=ray",
                                    f"ray.address={nodes['address']}", *overrides)
    proc = subprocess.run(in_ns(nodes["ns"], *args), cwd=REPO, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "BENCH_DATA_ROOT": str(tmp_path / "none")})
    return BenchRun(proc, run_dir, uri)


@pytest.fixture
def worker_restored(cluster):
    """For a test that takes the worker node down: a new worker joins after it, so the module's other tests find
    two nodes whatever order they run in (the tests run in a random order)."""
    yield cluster.nodes
    stop_node(cluster.nodes["worker"])  # what is left of it: its process group
    cluster.nodes["worker"] = cluster.start_worker()
    cluster.wait_for_nodes(2)


def _on_node(p: psutil.Process, node_pgid: int) -> bool:
    """Whether a guest runs under the given node: one of its ancestors (the actor's worker, the raylet) is in
    that node's process group."""
    try:
        return any(pgid(a.pid) == node_pgid for a in p.parents())
    except psutil.Error:
        return False


def test_guests_of_one_scenario_land_on_both_nodes_with_disjoint_cores(tmp_path: Path, two_nodes):
    run = bench_in(two_nodes, tmp_path)
    assert run.proc.returncode == 0, run.proc.stdout[-2000:] + run.proc.stderr[-2000:]
    guests = run.results["guests"]
    nodes = {g["placement"]["node"] for g in guests}
    assert len(nodes) == 2, nodes  # one guest per node: each node holds one CPU
    cores = [set(g["placement"]["vcpus"]) for g in guests]
    assert not cores[0] & cores[1]  # two raylets on one host share its cores: never the same one
    for g in guests:
        assert g["result"]["status"] == "ok" and g["result"]["affinity"] == g["placement"]["vcpus"]
        assert g["sampled"]["cpu_pct.mean"] > 10 and g["sampled"]["rss_MiB.max"] > 50  # read on its node
        log = (run.run_dir / f"{g['spec']['guest_id']}.log").read_text()  # fetched from its node
        assert f"[guest {g['spec']['guest_id']} pid {g['result']['pid']}] training started" in log


def test_a_data_root_missing_on_a_node_is_one_line_before_anything_starts(tmp_path: Path, two_nodes):
    run = bench_in(two_nodes, tmp_path, f"data.cache_dir={two_nodes['hidden'] / 'cache'}")
    lines = [ln for ln in run.proc.stderr.splitlines() if ln.strip() and "mlflow" not in ln.lower()]
    assert run.proc.returncode == 2 and len(lines) == 1, run.proc.stderr[-2000:]
    assert lines[0].startswith(f"error: data root {two_nodes['hidden'] / 'cache'}/synthetic-mnist")
    assert f"is missing on Ray node(s) vm ({WORKER_IP}) node " in lines[0].replace(os.uname().nodename, "vm")
    assert f"({HEAD_IP})" not in lines[0]  # the head has it
    assert not run.run_dir.exists()


def without_the_checkout(nodes: dict) -> list[str]:
    """A node's wrap where the checkout's packages are empty folders (tmpfs over them, in a private mount
    namespace): the venv's editable install finds nothing there, so the node imports the suite only from what
    ray.working_dir shipped, as a remote node does."""
    hides = " && ".join(f"mount -t tmpfs tmpfs {REPO / package}" for package in SUITE_PACKAGES)
    return ["unshare", "--mount", "--propagation", "private", "sh", "-c", f'{hides} && exec "$0" "$@"']


@pytest.fixture
def nodes_without_the_suite():
    c = NamespaceCluster(head_wrap=without_the_checkout, worker_wrap=without_the_checkout)
    c.start()
    yield c.nodes
    c.stop()


def test_the_suite_shipped_with_ray_working_dir_runs_the_guests(tmp_path: Path, nodes_without_the_suite):
    run = bench_in(nodes_without_the_suite, tmp_path, "ray.working_dir=.")
    assert run.proc.returncode == 0, run.proc.stdout[-2000:] + run.proc.stderr[-2000:]
    assert len({g["placement"]["node"] for g in run.results["guests"]}) == 2  # both nodes ran one
    for g in run.results["guests"]:
        note = g["placement"]["note"]
        assert "suite shipped to " in note and str(REPO) not in note.split("suite shipped to ")[1], note
        assert g["result"]["status"] == "ok", g["result"]


def test_a_node_killed_mid_run_fails_its_guest_and_the_other_finishes(tmp_path: Path, worker_restored):
    two_nodes = worker_restored
    args, run_dir, _ = bench_args(tmp_path, *SMOKE, "scenario=concurrent", *M60_4Q, "workload=idle",
                                  "workload.seconds=20", "backend=ray", f"ray.address={two_nodes['address']}")
    runner = subprocess.Popen(in_ns(two_nodes["ns"], *args), cwd=REPO, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True,
                              env={**os.environ, "BENCH_DATA_ROOT": str(tmp_path / "none")})
    worker = two_nodes["worker"]
    wait_while_running(runner, lambda: [p for p in psutil.process_iter(["cmdline"])
                                        if "suites.guest" in (p.info["cmdline"] or [])
                                        and pgid(p.pid) != worker.pid and _on_node(p, worker.pid)],
                       180, "a guest should run on the worker node")
    time.sleep(2)  # past the barrier: both idle
    os.killpg(worker.pid, signal.SIGKILL)  # the whole worker node: raylet, its workers, their guests
    out, _ = runner.communicate(timeout=180)
    assert runner.returncode == 1, out[-3000:]
    res = json.loads((run_dir / "results.json").read_text())
    assert res["status"] == "partial"
    by_status = {g["result"]["status"]: g for g in res["guests"]}
    assert set(by_status) == {"ok", "failed"}
    assert "Ray actor lost" in by_status["failed"]["result"]["error"], by_status["failed"]["result"]["error"]
    assert by_status["ok"]["result"]["metrics"]["train_time_s"] >= 19
