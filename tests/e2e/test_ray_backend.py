"""backend=ray: guests as Ray actors on a real Ray cluster started here, bound to loopback only.

The cluster declares one logical GPU, so vGPU-style fractional requests are
exercised for real (Ray packs two M60-4Q guests, 0.5 GPU each, onto GPU 0)
even on a host without one; the guests then train on the CPU.
"""

from __future__ import annotations

import ipaddress
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import psutil
import pytest

from suites.backends.leftovers import state_root
from suites.backends.ray import cluster as ray_backend
from suites.backends.ray.agent import GuestAgent
from suites.config.profiles import GpuAccess, ProfileConfig
from suites.poll import wait_until
from tests.support.helpers import REPO, SMOKE, bench_args, free_port, free_ports, run_bench, wait_while_running
from tests.support.raynodes import LOOPBACK_ENV, NO_AUTH, start_node, stop_node

M60_4Q = ["profile=m60-4q", "profile.memory_MiB=2048"]


@dataclass(frozen=True)
class Cluster:
    address: str
    pgid: int
    folder: Path  # its Ray temp folder, and the node's benchmark state (BENCH_STATE_DIR: raynodes.start_node)


@pytest.fixture(scope="module")
def ray_cluster():
    saved = os.environ.get("RAY_AUTH_MODE")
    os.environ.update(NO_AUTH)  # the runners agree with the cluster
    port, client_port = free_ports(2)
    temp = tempfile.mkdtemp(prefix="ray", dir="/tmp")  # short: Ray's unix socket paths must fit 107 bytes
    proc = start_node(["--head", "--node-ip-address=127.0.0.1", f"--port={port}",
                       f"--ray-client-server-port={client_port}", f"--temp-dir={temp}",
                       "--num-cpus=2", "--num-gpus=1", "--memory=6000000000", "--object-store-memory=100000000",
                       "--include-dashboard=false"], Path(temp) / "start.log")
    yield Cluster(f"127.0.0.1:{port}", proc.pid, Path(temp))
    stop_node(proc)
    shutil.rmtree(temp, ignore_errors=True)  # its sessions' logs and sockets: one folder per run left in /tmp
    if saved is None:
        os.environ.pop("RAY_AUTH_MODE", None)
    else:
        os.environ["RAY_AUTH_MODE"] = saved


def guest_processes(cluster: Cluster) -> list[psutil.Process]:
    """Guests started by this cluster's GuestAgents: their stderr is the agent's log, in the node's benchmark state
    in the cluster's folder (guests of other clusters, which tests in another process start, log elsewhere)."""
    out = []
    for p in psutil.process_iter(["cmdline"]):
        if "suites.guest" not in (p.info["cmdline"] or []):
            continue
        try:
            if os.readlink(f"/proc/{p.pid}/fd/2").startswith(f"{cluster.folder}/"):
                out.append(p)
        except OSError:
            continue
    return out


def _pgid(pid: int) -> int | None:
    try:
        return os.getpgid(pid)
    except OSError:
        return None


def _conns(p: psutil.Process) -> list:
    try:
        return p.net_connections(kind="inet")
    except psutil.Error:
        return []


def start_long_run(tmp_path: Path, cluster: Cluster) -> tuple[subprocess.Popen, Path]:
    """A 2-guest Ray run that trains for minutes; returns once both guests are past the barrier."""
    args, run_dir, _ = bench_args(tmp_path, *SMOKE, "scenario=concurrent", *M60_4Q, "workload.epochs=500",
                                  "workload.max_steps=null", "workload.size_by=work", "backend=ray",
                                  f"ray.address={cluster.address}",
                                  "workload.allow_cpu_fallback=true")  # the cluster's GPU is logical
    runner = subprocess.Popen(args, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              env={**os.environ, "BENCH_DATA_ROOT": str(tmp_path / "none")})
    wait_while_running(runner, lambda: (len(guests := guest_processes(cluster)) == 2
                                        and all("training started" in node_log(p) for p in guests)),
                       180, "both guests should train under Ray actors")
    return runner, run_dir


def node_log(p: psutil.Process) -> str:
    """The guest's log where its agent keeps it (the runner gets a copy when the guest ends)."""
    try:
        return Path(os.readlink(f"/proc/{p.pid}/fd/2")).read_text()
    except OSError:
        return ""


def wait_until_no_guest(cluster: Cluster, timeout_s: float = 60) -> None:
    assert wait_until(lambda: not guest_processes(cluster), timeout_s, 0.5), guest_processes(cluster)


# A driver that blocks in ray.wait (as the runner's supervise loop does) when SIGTERM comes.
SIGTERM_IN_RAY_WAIT = """
import os, signal, sys, threading, time
import ray
from suites.run.shield import interrupt_reason, stop_on_signals

ray.init(address=sys.argv[1], log_to_driver=False)
stop_on_signals()  # after ray.init, as the runner's handlers are put back after it
nap = ray.remote(num_cpus=0)(lambda: time.sleep(60)).remote()
threading.Timer(2.0, os.kill, (os.getpid(), signal.SIGTERM)).start()
try:
    ray.wait([nap], timeout=30)
except KeyboardInterrupt as exc:
    print(type(exc).__name__, interrupt_reason(exc), flush=True)
ray.cancel(nap, force=True)
"""


@pytest.mark.cluster
def test_ray_cluster_listens_on_loopback_only(ray_cluster):
    pgid = ray_cluster.pgid
    members = [p for p in psutil.process_iter() if _pgid(p.pid) == pgid]
    listening = [c.laddr for p in members for c in _conns(p) if c.status == psutil.CONN_LISTEN]
    assert listening, "the Ray cluster should listen somewhere"
    assert all(ipaddress.ip_address(a.ip.removeprefix("::ffff:")).is_loopback for a in listening), listening


@pytest.mark.cluster
def test_two_guest_mix_runs_as_ray_actors_sharing_one_gpu(tmp_path: Path, ray_cluster):
    address = ray_cluster.address
    mix = ("scenario.groups=[{workload:graphics-replay,guests:1,overrides:['workload.frames_per_test=10']},"
           "{workload:mnist-torch,guests:1,overrides:['workload.train_limit=2048','workload.width=8',"
           "'workload.allow_cpu_fallback=true']}]")  # Ray's GPU here is logical: the guest trains on the CPU
    run = run_bench(tmp_path, "scenario=mixed-once", mix, *M60_4Q, "profile.vcpus=1", "progress=quiet", "backend=ray",
                    f"ray.address={address}")
    assert run.proc.returncode == 0, run.proc.stderr[-3000:]
    res = run.results
    assert res["status"] == "ok" and len(res["guests"]) == 2
    by_workload = {g["spec"]["workload"]: g for g in res["guests"]}
    assert set(by_workload) == {"graphics-replay", "mnist-torch"}
    for g in res["guests"]:
        p = g["placement"]
        assert p["resources"] == {"CPU": 1.0, "GPU": 0.5, "memory": 2048 * 1024 * 1024}
        assert "(127.0.0.1) node " in p["node"] and p["gpus"] == ["0"] and g["spec"]["gpus"] == ["0"]
        assert "0.5 of GPU 0" in p["note"]
        assert g["result"]["affinity"] == p["vcpus"]  # the guest applied the node-local CPUs it was given
        assert g["sampled"]["cpu_pct.mean"] > 10 and g["sampled"]["rss_MiB.max"] > 50  # read on the node
        log = (run.run_dir / f"{g['spec']['guest_id']}.log").read_text()
        assert f"[guest {g['spec']['guest_id']} pid {g['result']['pid']}] training started" in log
    assert {tuple(g["placement"]["vcpus"]) for g in res["guests"]} == {(0,), (1,)}
    starts = [g["result"]["t_train_start"] for g in res["guests"]]
    ends = [g["result"]["t_train_end"] for g in res["guests"]]
    assert max(starts) < min(ends), "the two guests must train at the same time"
    assert by_workload["graphics-replay"]["result"]["metrics"]["frames"] > 0
    assert by_workload["mnist-torch"]["result"]["metrics"]["images"] > 0
    assert "Ray node" in run.proc.stdout and "0.5 of GPU 0" in run.proc.stdout
    assert not guest_processes(ray_cluster)


@pytest.mark.cluster
def test_every_phase_of_a_comparison_runs_on_the_given_cluster(tmp_path: Path, ray_cluster):
    """Each phase leaves Ray when it ends; the next must join ray.address again, not a private local Ray."""
    address = ray_cluster.address
    phases = ("scenario.phases=[{label:cpu,overrides:['profile=cpu']},"
              "{label:1-gpu,overrides:['profile=passthrough-1gpu']}]")
    run = run_bench(tmp_path, *SMOKE, "scenario=gpu-vs-cpu", phases, "scenario.baseline=cpu", "profile.memory_MiB=2048",
                    "scenario.start_timeout_s=40", "backend=ray", f"ray.address={address}",
                    "workload.allow_cpu_fallback=true")  # the cluster's GPU is logical
    assert run.proc.returncode == 0, run.proc.stdout[-2000:] + run.proc.stderr[-2000:]
    gpu = json.loads((run.run_dir / "1-gpu" / "results.json").read_text())["guests"][0]
    assert gpu["result"]["status"] == "ok"  # a private local Ray has no GPU: this guest could not be placed there
    assert gpu["placement"]["gpus"] == ["0"] and "1 of GPU 0" in gpu["placement"]["note"]


@pytest.mark.cluster
def test_more_guests_than_the_cluster_holds_is_one_line_before_any_start(tmp_path: Path, ray_cluster):
    address = ray_cluster.address
    run = run_bench(tmp_path, *SMOKE, "scenario=concurrent", "profile=m60-8q", "profile.memory_MiB=2048", "backend=ray",
                    f"ray.address={address}")
    lines = [ln for ln in run.proc.stderr.splitlines() if ln.strip() and "mlflow" not in ln.lower()]
    assert run.proc.returncode == 2 and len(lines) == 1, run.proc.stderr
    assert "2 guest(s) of m60-8q need 2 GPU > 1 GPU in the Ray cluster" in lines[0]
    assert not (run.run_dir / "results.json").exists()


def test_no_cluster_at_the_address_is_one_line_within_seconds(tmp_path: Path):
    t0 = time.monotonic()
    run = run_bench(tmp_path, *SMOKE, "backend=ray", f"ray.address=127.0.0.1:{free_port()}")
    assert run.proc.returncode == 2, run.proc.stderr
    assert "nothing answers at 127.0.0.1" in run.proc.stderr.strip().splitlines()[-1]
    assert time.monotonic() - t0 < 60  # Ray alone would retry a dead address for minutes


@pytest.mark.cluster
def test_sigterm_stops_ray_guests_and_records_the_interruption(tmp_path: Path, ray_cluster):
    runner, run_dir = start_long_run(tmp_path, ray_cluster)
    runner.send_signal(signal.SIGTERM)  # ray.init must not have replaced the runner's handler
    out, _ = runner.communicate(timeout=120)
    assert runner.returncode == 130, out[-2000:]
    res = json.loads((run_dir / "results.json").read_text())
    assert res["status"] == "interrupted"
    assert all(g["result"]["error"] == "interrupted (SIGTERM)" for g in res["guests"])
    wait_until_no_guest(ray_cluster)


@pytest.mark.cluster
def test_killing_the_runner_leaves_no_guest_behind(tmp_path: Path, ray_cluster):
    runner, _ = start_long_run(tmp_path, ray_cluster)
    # Ray's workers started them, not the runner
    assert all(p.ppid() != runner.pid for p in guest_processes(ray_cluster))
    runner.kill()  # SIGKILL: no cleanup code runs; Ray ends the actors of a dead driver, the guests die with them
    runner.communicate()
    wait_until_no_guest(ray_cluster)


@pytest.mark.cluster
@pytest.mark.parametrize(("access", "gpus", "per_gpu", "cluster_gpus", "want_gpu", "note"), [
    ("vgpu", 1, 8, 4, 0.125, ""),
    ("vgpu", 1, 3, 1, 0.3333, ""),  # rounded down, so three fit on one GPU
    ("passthrough", 2, 1, 4, 2.0, ""),
    ("cpu", 0, 1, 4, None, ""),
    ("vgpu", 1, 2, 0, None, "no GPU in the Ray cluster"),
])
def test_ray_requests_whole_or_fractional_gpus(access, gpus, per_gpu, cluster_gpus, want_gpu, note):
    profile = ProfileConfig(name="p", gpu_access=GpuAccess(access), gpus=gpus, max_per_gpu=per_gpu, vcpus=3,
                            memory_MiB=1024, framebuffer_MiB=1024 if access == "vgpu" else None)
    res, why = ray_backend.request(profile, cluster_gpus, overcommit=False)
    assert res.get("GPU") == want_gpu and res["CPU"] == 3.0 and res["memory"] == 1024 * 1024 * 1024
    assert note in why
    assert 3 * res.get("GPU", 0) <= 1.0 or per_gpu != 3


def test_a_guest_log_folder_a_killed_runner_left_is_removed_by_the_next_agent():
    """An agent whose runner was SIGKILLed (or whose node died) never runs finish(): its folder stays in the node's
    benchmark state until the next agent there removes it; a live agent's is kept."""
    gone = subprocess.Popen(["true"])
    gone.wait()
    stale, live = (state_root() / "ray" / f"gmb-guest-{pid}-x" for pid in (gone.pid, os.getppid()))
    for d in (stale, live):
        d.mkdir(parents=True)
        (d / "guest.log").write_text("[guest g0] training started\n")
    agent = GuestAgent()
    assert not stale.exists() and live.is_dir()
    assert agent.log_path.parent.parent == state_root() / "ray"
    assert agent.log_path.parent.name.startswith(f"gmb-guest-{os.getpid()}-")
    agent.finish()
    assert not agent.log_path.parent.exists()


@pytest.mark.cluster
def test_a_sigterm_that_lands_in_ray_wait_is_still_named_sigterm(ray_cluster):
    """Ray's wait loop catches the Interrupted the runner's handler raises and raises a bare KeyboardInterrupt of its
    own: the guests of a Ray run stopped by SIGTERM were sometimes recorded as stopped by Ctrl-C."""
    done = subprocess.run([sys.executable, "-c", SIGTERM_IN_RAY_WAIT, ray_cluster.address], cwd=REPO,
                          capture_output=True, text=True, timeout=120, env={**os.environ, **LOOPBACK_ENV})
    assert done.stdout.strip().splitlines()[-1:] == ["KeyboardInterrupt interrupted (SIGTERM)"],\
        done.stdout[-1000:] + done.stderr[-2000:]
