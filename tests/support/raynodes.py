"""Ray nodes for the tests, started with the real `ray start` on loopback and stopped without a trace."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psutil
import pytest

from suites.backends.leftovers import STATE_ENV
from suites.poll import wait_until

from .helpers import free_ports, stop_group

RAY = Path(sys.executable).with_name("ray")
# Ray otherwise rewrites 127.0.0.1 to the host's LAN address; with this it stays a loopback-only cluster.
LOOPBACK_ENV = {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"}
# No token auth, even where ~/.ray/auth_token exists (Ray turns it on for whoever finds that file; a cluster
# started before it appeared then refuses them).
NO_AUTH = {"RAY_AUTH_MODE": "disabled"}
NODE_FLAGS = ["--block", "--disable-usage-stats"]


def start_node(args: list[str], log: Path, wrap: list[str] | None = None, env: dict[str, str] | None = None,
               started: str = "Ray runtime started") -> subprocess.Popen:
    """``ray start <args> --block`` in its own process group (``wrap``: a command line it runs under, e.g. a
    network or mount namespace; ``env``: instead of the single-node loopback setting); returns once it is up. The
    node's benchmark state (its agents' guest logs) is in the log's folder, which goes with the cluster."""
    out = log.open("w")
    proc = subprocess.Popen([*(wrap or []), str(RAY), "start", *NODE_FLAGS, *args], stdout=out,
                            stderr=subprocess.STDOUT, start_new_session=True,
                            env={**os.environ, **(LOOPBACK_ENV if env is None else env), **NO_AUTH,
                                 STATE_ENV: str(log.parent / "state")})
    out.close()  # the child holds its own copy
    wait_until(lambda: started in log.read_text() or proc.poll() is not None, 120, 0.5)
    if started not in log.read_text():
        stop_node(proc)
        pytest.fail(f"ray start {' '.join(args[:2])} failed: " + log.read_text()[-1500:])
    return proc


def stop_node(proc: subprocess.Popen) -> None:
    """The node's whole process group (raylet, GCS, workers share it)."""
    stop_group(proc)


# --- two nodes in a network namespace of their own (tests/e2e/test_ray_cluster.py, test_ray_fleet.py) ----
# Both nodes and the runner live in a namespace with only its loopback (addresses 127.0.0.2 and 127.0.0.3): Ray in
# multi-node mode listens on every interface, and in there that is nothing but the test's own loopback.
NODE = ["--num-cpus=1", "--num-gpus=1", "--memory=2500000000", "--object-store-memory=80000000"]
HEAD_IP, WORKER_IP = "127.0.0.2", "127.0.0.3"  # not "localhost" to Ray, so it keeps them as given
MULTI_NODE = {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "1"}  # Ray's default on Linux, whatever the caller's shell says


def in_ns(ns: str, *cmd: str) -> list[str]:
    return ["ip", "netns", "exec", ns, *cmd]


def listening(ns: str) -> list[str]:
    """Listening TCP sockets inside the namespace, as `ss` reports them."""
    return subprocess.run(in_ns(ns, "ss", "-Htln"), capture_output=True, text=True, check=True).stdout.splitlines()


def pgid(pid: int) -> int | None:
    try:
        return os.getpgid(pid)
    except OSError:
        return None


def still_running(pids: set[int], timeout_s: float = 10) -> list[int]:
    """Of ``pids`` (their group sent SIGKILL), those still running after up to ``timeout_s``. A killed process takes a
    moment to exit (a Ray worker freeing a GiB of memory on a loaded host: CI once saw one listed as left right after
    the kill); one that left the group before the kill is never sent it, and stays listed."""
    def alive() -> list[int]:
        out = []
        for pid in pids:
            try:
                if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                    out.append(pid)
            except psutil.NoSuchProcess:
                continue
        return out

    wait_until(lambda: not alive(), timeout_s, 0.1)
    return alive()


class NamespaceCluster:
    """A head and a worker node, each declaring one CPU and one logical GPU, in a network namespace of this
    process's own. ``head_env`` / ``worker_env``: what each node's processes (and so its actors and guests) have in
    their environment besides the multi-node setting; ``worker_wrap(nodes)``: a command line the worker runs under
    inside the namespace (``head_wrap``: the head's). :meth:`stop` checks that no process, socket, namespace or
    temp folder is left."""

    def __init__(self, head_env: dict[str, str] | None = None, worker_env: dict[str, str] | None = None,
                 worker_wrap: Callable[[dict[str, Any]], list[str]] | None = None,
                 head_wrap: Callable[[dict[str, Any]], list[str]] | None = None) -> None:
        self.head_env, self.worker_env = {**MULTI_NODE, **(head_env or {})}, {**MULTI_NODE, **(worker_env or {})}
        self.worker_wrap = worker_wrap or (lambda nodes: [])
        self.head_wrap = head_wrap or (lambda nodes: [])
        self.nodes: dict[str, Any] = {}

    def start(self) -> dict[str, Any]:
        if shutil.which("unshare") is None or shutil.which("ip") is None:
            pytest.skip("unshare (util-linux) or ip (iproute2) is not installed (make setup-cluster)")
        if os.geteuid() != 0:
            pytest.skip("network and mount namespaces need root (CI and the team's machines run as root)")
        self.saved = os.environ.get("RAY_AUTH_MODE")
        os.environ.update(NO_AUTH)
        ns = f"gmb-ray-{os.getpid()}-{id(self) % 10000}"
        subprocess.run(["ip", "netns", "add", ns], check=True)
        subprocess.run(["ip", "-n", ns, "link", "set", "lo", "up"], check=True)
        temp = Path(tempfile.mkdtemp(prefix="ray2", dir="/tmp"))  # short: Ray's socket paths must fit 107 bytes
        hidden = temp / "hidden"  # for a worker_wrap that hides it (an empty tmpfs over it there)
        hidden.mkdir()
        port, client_port = free_ports(2)
        self.nodes = {"address": f"{HEAD_IP}:{port}", "ns": ns, "hidden": hidden, "temp": temp}
        try:
            self.nodes["head"] = start_node(
                ["--head", f"--node-ip-address={HEAD_IP}", f"--port={port}", f"--temp-dir={temp}",
                 f"--ray-client-server-port={client_port}", "--include-dashboard=false", *NODE,
                 '--resources={"head": 1}'], temp / "head.log", wrap=in_ns(ns, *self.head_wrap(self.nodes)),
                env=self.head_env)
            self.nodes["worker"] = self.start_worker()
            assert any(f":{port}" in line for line in listening(ns))
        except BaseException:  # a node that did not come up: the one that did, the namespace, the folder go too
            self.stop(check=False)
            raise
        return self.nodes

    def start_worker(self) -> subprocess.Popen:
        """The worker node (again, after a test took it down); returns once it is up."""
        nodes = self.nodes
        return start_node([f"--address={nodes['address']}", f"--node-ip-address={WORKER_IP}", *NODE,
                           '--resources={"worker": 1}'], nodes["temp"] / "worker.log", env=self.worker_env,
                          wrap=in_ns(nodes["ns"], *self.worker_wrap(nodes)))

    def stop(self, check: bool = True) -> None:
        """Both nodes' process groups, the namespace and the folder; ``check``: assert nothing is left."""
        nodes, ns, temp = self.nodes, self.nodes["ns"], self.nodes["temp"]
        started = [nodes[k] for k in ("worker", "head") if k in nodes]
        leaders = {proc.pid for proc in started}
        members = {p.pid for p in psutil.process_iter() if pgid(p.pid) in leaders}
        for proc in started:
            stop_node(proc)
        alive = still_running(members)
        left = listening(ns)
        subprocess.run(["ip", "netns", "del", ns], check=True)
        shutil.rmtree(temp, ignore_errors=True)
        if self.saved is None:
            os.environ.pop("RAY_AUTH_MODE", None)
        else:
            os.environ["RAY_AUTH_MODE"] = self.saved
        if not check:
            return
        assert not alive, f"Ray processes left: {alive}"
        assert not left, f"sockets left listening: {left}"
        assert not temp.exists() and ns not in subprocess.run(["ip", "netns", "list"], capture_output=True,
                                                               text=True).stdout

    def wait_for_nodes(self, count: int, timeout_s: float = 120) -> None:
        """Until the cluster counts ``count`` live nodes (a restarted worker has registered with the head)."""
        probe = "import ray, sys; ray.init(address=sys.argv[1]); print(sum(n['Alive'] for n in ray.nodes()))"
        said = [""]

        def counted() -> bool:
            done = subprocess.run(in_ns(self.nodes["ns"], sys.executable, "-c", probe, self.nodes["address"]),
                                  capture_output=True, text=True, timeout=120, env={**os.environ, **MULTI_NODE})
            said[0] = done.stdout
            return done.stdout.strip().splitlines()[-1:] == [str(count)]

        assert wait_until(counted, timeout_s, 1), f"the cluster did not count {count} live nodes: {said[0][-500:]}"
