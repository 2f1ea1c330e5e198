"""Guests as Ray actors: the same guest process and protocol lines, on any node of a Ray cluster.

``backend=ray ray.address=HOST:PORT`` places each guest as one actor that
asks Ray for the guest's vCPUs, memory and GPUs: whole GPUs for passthrough,
``1/max_per_gpu`` of one for a vGPU profile, so Ray packs vGPU-like guests
onto shared GPUs the way a hypervisor does. The actor (:class:`GuestAgent`)
starts ``python -m suites.guest`` on its node and relays protocol lines and
CPU/RSS readings; the runner's state machine, barrier and records are the
local backend's (:class:`~suites.backends.base.Backend`). Ray itself is
imported only here and in :mod:`suites.backends.ray.agent`, and only when used.
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gpu_probe import vocab
from gpu_probe.inventory import Inventory, git_sha
from gpu_probe.shapes import JsonObject
from gpu_probe.stats import ClockOffset, clock_offset
from suites.backends.base import Backend
from suites.backends.handle import REPO_ROOT, GuestHandle
from suites.backends.placement import Placement, place_cpus
from suites.backends.ray.agent import GuestAgent, RayGuest, RemotePipe, host_key, node_report
from suites.backends.ray.fleet import labels, place_per_node
from suites.backends.ray.fleet import offer as fleet_offer
from suites.backends.ray.package import check_shipped
from suites.config.profiles import GpuAccess, ProfileConfig
from suites.config.schema import PER_NODE, RayConfig
from suites.errors import ConfigError, DataError, PlacementError, first_line
from suites.guest.protocol import GuestSpec
from suites.validity import EMULATED, ENFORCED, NOT_ENFORCED


def connect(cfg: RayConfig) -> list[JsonObject]:
    """Join the cluster (once per process); its live nodes, or one ConfigError line within seconds."""
    host, port = gcs_endpoint(cfg.address)
    if host in LOOPBACK:
        # Ray rewrites a loopback address to the host's LAN address unless told the cluster is single-node;
        # a cluster started on 127.0.0.1 (tests, laptops) is reachable only as given. A value set by the user wins.
        os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
    import ray

    if ray.is_initialized():
        return [n for n in ray.nodes() if n.get("Alive")]
    if cfg.working_dir:  # before any cluster is asked: a suite shipped without its modules fails every guest
        check_shipped(cfg.working_dir, cfg.excludes)
    if host is None:
        host, port = gcs_endpoint(auto_address(cfg.address))
    probe(cfg.address, host, port)  # ray.init retries a dead address for minutes; fail fast instead
    runtime_env = None
    if cfg.working_dir:
        runtime_env = {"working_dir": cfg.working_dir, "excludes": cfg.excludes}
    saved = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGHUP)}
    try:
        ray.init(address=cfg.address, namespace=cfg.namespace, runtime_env=runtime_env, log_to_driver=False,
                 logging_level=logging.WARNING, configure_logging=True)
    except Exception as exc:  # ConnectionError, ValueError, RuntimeError: all mean "no usable cluster there"
        raise ConfigError(f"ray.address={cfg.address}: cannot join a Ray cluster ({first_line(exc)})") from exc
    finally:
        if threading.current_thread() is threading.main_thread():
            # ray.init makes SIGTERM a bare sys.exit; the runner's handlers stop guests and record (like Ctrl-C)
            for s, handler in saved.items():
                if handler is not None:
                    signal.signal(s, handler)
    return [n for n in ray.nodes() if n.get("Alive")]


LOOPBACK = ("127.0.0.1", "localhost", "::1")


def cluster_gpus(cfg: RayConfig) -> tuple[int, str]:
    """The GPUs a Ray cluster offers (whole GPUs over its live nodes, as Ray counts them) and a line saying so: what a
    study on a fleet plans with instead of this host's."""
    nodes = connect(cfg)
    gpus = int(sum(nd.get("Resources", {}).get("GPU", 0.0) for nd in nodes))
    return gpus, f"Ray cluster at {cfg.address}: {gpus} GPU(s) on {len(nodes)} node(s), ray.placement={cfg.placement}"


def gcs_endpoint(address: str) -> tuple[str | None, int]:
    """(host, port) of a HOST:PORT or ray://HOST:PORT address; (None, 0) for "auto"."""
    if address.strip() == "auto":
        return None, 0
    text = address.split("://", 1)[-1].rstrip("/")
    host, _, port = text.rpartition(":")
    if not host or not port.isdigit():
        raise ConfigError(f"ray.address={address}: expected auto, HOST:PORT or ray://HOST:PORT")
    return host.strip("[]"), int(port)


def auto_address(address: str) -> str:
    """What Ray's "auto" resolves to (RAY_ADDRESS, else the cluster last started on this node)."""
    from ray._private.services import canonicalize_bootstrap_address

    try:
        found = canonicalize_bootstrap_address(address)
    except Exception as exc:
        raise ConfigError(f"ray.address={address}: {first_line(exc)}") from exc
    if not found:
        raise ConfigError(f"ray.address={address}: no running Ray cluster found (start one with `ray start --head`"
                          " or give ray.address=HOST:PORT)")
    return found


def probe(address: str, host: str, port: int, timeout_s: float = 5.0) -> None:
    try:
        socket.create_connection((host, port), timeout=timeout_s).close()
    except OSError as exc:
        raise ConfigError(f"ray.address={address}: nothing answers at {host}:{port} ({exc.strerror or exc}); "
                          "is the cluster up (`ray status`)?") from exc


def request(profile: ProfileConfig, gpus_in_cluster: float, overcommit: bool) -> tuple[dict[str, float], str]:
    """What one guest asks Ray for, and a note when the profile cannot be enforced."""
    res = {"CPU": 0.0 if overcommit else float(profile.vcpus), "memory": float(profile.memory_MiB * vocab.MiB)}
    if profile.gpu_access is GpuAccess.cpu:
        return res, ""
    if not gpus_in_cluster:
        return res, f"{vocab.NO_GPU} in the Ray cluster: profile {profile.name} not enforced, guest runs on the CPU"
    if profile.gpu_access is GpuAccess.passthrough:
        res["GPU"] = float(profile.gpus)
    else:  # Ray accepts fractions down to 1e-4; 1/3 is rounded down so three still fit on one GPU
        res["GPU"] = int(10_000 / profile.max_per_gpu) / 10_000
    return res, ""


def fits(res: dict[str, float], node: JsonObject) -> bool:
    have = node.get("Resources", {})
    return all(v <= have.get(k, 0.0) + 1e-9 for k, v in res.items() if v)


def amount(key: str, value: float) -> str:
    return f"{value / vocab.MiB:.0f} MiB" if key == "memory" else f"{value:g} {key}"


def resources_text(res: dict[str, float]) -> str:
    return ", ".join(amount(k, res.get(k, 0.0)) for k in ("CPU", "GPU", "memory"))


def place_on_cluster(profile: ProfileConfig, n: int, nodes: list[JsonObject], overcommit: bool,
                     address: str) -> list[Placement]:
    """Check the whole request against the cluster now; Ray picks nodes (and CPUs, GPUs) at start."""
    total = {k: sum(nd.get("Resources", {}).get(k, 0.0) for nd in nodes) for k in ("CPU", "GPU", "memory")}
    res, note = request(profile, total["GPU"], overcommit)
    where = f"the Ray cluster at {address} ({len(nodes)} node(s): {resources_text(total)})"
    if not any(fits(res, nd) for nd in nodes):
        raise PlacementError(f"one guest of {profile.name} needs {resources_text(res)}; no node of {where} has that")
    for key, hint in (("CPU", "lower profile.vcpus or set scenario.cpu_overcommit=true"),
                      ("GPU", "fewer guests or a profile with more guests per GPU"),
                      ("memory", "lower profile.memory_MiB")):
        need = n * res.get(key, 0.0)
        if need > total[key] + 1e-6:
            raise PlacementError(f"{n} guest(s) of {profile.name} need {amount(key, need)} > "
                                 f"{amount(key, total[key])} in {where} ({hint})")
    # Ray's fractional GPUs stand in for a vGPU; the guest's own report corrects this if it ran on the CPU
    validity = NOT_ENFORCED if note else (EMULATED if profile.gpu_access is GpuAccess.vgpu else ENFORCED)
    return [Placement(f"g{i}", [], [], [], note, resources=dict(res), validity=validity) for i in range(n)]


def on_node(node_id: str) -> Any:
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    return NodeAffinitySchedulingStrategy(node_id, soft=False)


def on_each_node(fn: Callable[..., Any], nodes: list[JsonObject], args_of: Callable[[JsonObject], tuple],
                 timeout_s: float) -> list[Any]:
    """``fn(*args_of(node))`` run on each live node itself (a zero-CPU task pinned there), in the nodes' order."""
    import ray

    task = ray.remote(num_cpus=0)(fn)
    return ray.get([task.options(scheduling_strategy=on_node(n["NodeID"])).remote(*args_of(n)) for n in nodes],
                   timeout=timeout_s)


def node_reports(nodes: list[JsonObject], timeout_s: float = 120.0) -> list[JsonObject]:
    """Every live node's report of itself (gpu_probe there), asked on each node, in the cluster's order."""
    try:
        return on_each_node(node_report, nodes, lambda n: (n.get("Resources", {}).get("GPU", 0.0),), timeout_s)
    except Exception as exc:
        raise PlacementError(f"ray.placement=per-node: the nodes did not report their GPUs within {timeout_s:.0f} s "
                             f"({first_line(exc)})") from exc


def measure_offset(actor: Any, rounds: int = 7) -> ClockOffset:
    """The actor's node clock minus this one, from ``rounds`` round trips to :meth:`GuestAgent.now` (the first
    warms the connection and is dropped)."""
    import ray

    trips = []
    for _ in range(rounds + 1):
        sent = time.time()
        theirs = ray.get(actor.now.remote(), timeout=30)
        trips.append((sent, theirs, time.time()))
    return clock_offset(trips[1:])


def make_guests(specs: list[GuestSpec], placements: list[Placement], log_dir: Path,
                sample_hz: float = 0.0) -> list[GuestHandle]:
    """One actor per guest, asking Ray for the placement's resources (Ray schedules them now); a guest placed on
    a node of its own (``node_id``) is pinned there and its node's GPUs sampled at ``sample_hz``."""
    import ray

    agent = ray.remote(GuestAgent)
    guests: list[GuestHandle] = []
    for s, p in zip(specs, placements, strict=True):
        res = p.resources
        pin = {"scheduling_strategy": on_node(p.node_id)} if p.node_id else {}
        actor = agent.options(num_cpus=res.get("CPU", 0.0), num_gpus=res.get("GPU", 0.0),
                              memory=res.get("memory") or None, max_restarts=0, **pin
                              ).remote(sample_hz if p.node_id else 0.0)
        log_path = log_dir / f"{s.guest_id}.log"
        guests.append(RayGuest(s, log_path, RemotePipe(actor, log_path)))
    return guests


def start_actors(guests: list[GuestHandle], placements: list[Placement], vcpus: int, overcommit: bool,
                 timeout_s: float) -> None:
    """Wait until Ray has placed every actor, give each node's guests disjoint CPUs there, start them."""
    import ray

    print(f"ray: waiting for the cluster to place {len(guests)} guest actor(s)", file=sys.stderr, flush=True)
    refs = {remote(g).actor.node.remote(): (g, p) for g, p in zip(guests, placements, strict=True)}
    ready, _ = ray.wait(list(refs), num_returns=len(refs), timeout=timeout_s)
    free = resources_text(ray.available_resources())
    nodes: dict[str, list[tuple[GuestHandle, Placement, JsonObject]]] = {}
    for ref, (g, p) in refs.items():
        if ref not in ready:
            g.kill(f"Ray did not place it within {timeout_s:.0f} s: needs {resources_text(p.resources)}, free {free}")
            continue
        info = ray.get(ref)
        nodes.setdefault(info["node_id"], []).append((g, p, info))
    here, mine = host_key(), git_sha(REPO_ROOT)
    for members in by_host(nodes).values():
        info = members[0][2]
        want = node_vcpus(vcpus, len(members), info["cpus"]) if members[0][1].node_id else vcpus
        try:
            cpu_sets = place_cpus(len(members), want, info["cpus"], overcommit)
        except PlacementError as exc:
            for g, _, _ in members:
                g.kill(f"Ray node {info['host']}: {exc}")
            continue
        for (g, p, node_info), cpus in zip(members, cpu_sets, strict=True):
            assign(g, p, node_info, cpus, mine)
            pipe = remote(g)
            pipe.same_host = node_info["host_key"] == here
            if p.node_id:  # the node's clock against the runner's, before anything is stamped on it
                pipe.offset = measure_offset(pipe.actor)
                p.note = "; ".join(x for x in (p.note, f"clock offset {pipe.offset.text()}") if x)
            pipe.pid = ray.get(pipe.actor.start.remote(g.spec.to_line()))


def node_vcpus(vcpus: int, guests: int, cpus: list[int]) -> int:
    """A guest that has its node to itself gets the profile's vCPUs, or what the VM has where that is fewer (said in
    its placement note); guests of nodes that share one machine (tests) split its cores."""
    return max(1, min(vcpus, len(cpus) // max(guests, 1)))


def by_host(nodes: dict[str, list[Any]]) -> dict[str, list[Any]]:
    """Guests grouped by the machine under their nodes: Ray nodes that share one host (several raylets on one
    machine) share its cores, so their guests get disjoint CPUs of it, not each node's "CPU 0"."""
    hosts: dict[str, list[Any]] = {}
    for members in nodes.values():
        hosts.setdefault(members[0][2]["host_key"], []).extend(members)
    return hosts


def missing_on_nodes(path: str, nodes: list[JsonObject], timeout_s: float = 60.0) -> list[str]:
    """The live nodes on which ``path`` does not exist ("host (ip) node abcd1234"), asked on each node itself."""
    answers = on_each_node(os.path.exists, nodes, lambda n: (path,), timeout_s)
    return [node_label(n) for n, ok in zip(nodes, answers, strict=True) if not ok]


def node_label(node: JsonObject) -> str:
    return f"{node.get('NodeManagerHostname', '?')} ({node.get('NodeManagerAddress', '?')}) node {node['NodeID'][:8]}"


def remote(g: GuestHandle) -> RemotePipe:
    assert isinstance(g.pipe, RemotePipe), "the Ray backend starts only guests it made (make_guests)"
    return g.pipe


def assign(g: GuestHandle, p: Placement, info: JsonObject, cpus: list[int], suite_sha: str) -> None:
    """The node's CPU ids and Ray's GPU ids go into the spec (the guest applies them) and the record."""
    g.spec.vcpus, g.spec.gpus = cpus, list(info["gpus"])
    p.vcpus, p.gpus, p.gpu_indices = cpus, list(info["gpus"]), [int(x) for x in info["gpus"] if x.isdigit()]
    p.node = f"{info['host']} ({info['ip']}) node {info.get('node_id', '?')[:8]}"
    shared = f"{p.resources['GPU']:g} of GPU {','.join(info['gpus'])}" if p.resources.get("GPU") else ""
    # the same code on both ends, or the record says which ran there
    other = f"suite {info['suite_sha']} there, {suite_sha} here" if info["suite_sha"] != suite_sha else ""
    shipped = f"suite shipped to {info['suite_dir']}" if info.get("suite_dir", str(REPO_ROOT)) != str(REPO_ROOT) else ""
    p.note = "; ".join(x for x in (p.note, f"Ray node {p.node}" + (f": {shared}" if shared else ""), other,
                                   shipped) if x)


def disconnect() -> None:
    import ray

    if ray.is_initialized():
        ray.shutdown()


class RayBackend(Backend):
    """``backend=ray``: each guest a Ray actor on the cluster at ``ray.address``."""

    name = "ray"

    def __init__(self, cfg: RayConfig, vcpus: int, cpu_overcommit: bool,
                 start_timeout_s: float, sample_hz: float = 0.0) -> None:
        self.cfg, self.vcpus = cfg, vcpus
        self.cpu_overcommit, self.start_timeout_s = cpu_overcommit, start_timeout_s
        self.sample_hz = sample_hz  # the run's sampler rate, also on each node (ray.placement=per-node)
        self.reports: list[JsonObject] = []  # what each node said it is (per-node), asked once per run

    def place(self, profile: ProfileConfig, n: int, inv: Inventory) -> list[Placement]:
        """Ray's view of the cluster decides; CPUs and GPUs are picked on the nodes at start. Per node: each guest
        a node whose GPU is the profile, by what the node itself reports."""
        nodes = connect(self.cfg)
        if self.cfg.placement != PER_NODE:
            return place_on_cluster(profile, n, nodes, self.cpu_overcommit, self.cfg.address)
        live = {nd["NodeID"] for nd in nodes}
        if {r["node_id"] for r in self.reports} != live:
            self.reports = node_reports(nodes)
        name = labels(self.reports)
        print(f"ray: {len(self.reports)} node(s): " + ", ".join(f"{name[r['node_id']]} {fleet_offer(r)}"
                                                              for r in self.reports), file=sys.stderr, flush=True)
        return place_per_node(profile, n, self.reports, dict(self.cfg.gpu_groups))

    def check_data(self, data: JsonObject) -> None:
        """The data must be at the same path on every node (a shared filesystem, or a copy): asked on each live
        node before anything starts. It is not shipped with ray.working_dir, which carries code (data sets are
        larger than Ray's upload limit)."""
        root = data.get("root")
        if not root:
            return
        missing = missing_on_nodes(str(root), connect(self.cfg))
        if missing:
            raise DataError(f"data root {root} is missing on Ray node(s) {', '.join(missing)}: put it at the same "
                            "path on every node (a shared filesystem), or point data.root/data.cache_dir there")

    def start(self, specs: list[GuestSpec], placements: list[Placement], log_dir: Path,
              started: list[GuestHandle]) -> None:
        # Joined at plan time, but a comparison's earlier phase has left again; without this Ray would
        # silently start a private local instance for the next phase instead of using ray.address.
        connect(self.cfg)
        started += make_guests(specs, placements, log_dir, self.sample_hz)
        start_actors(started, placements, self.vcpus, self.cpu_overcommit, self.start_timeout_s)

    def shutdown(self) -> None:
        disconnect()



def survey(cfg: RayConfig) -> list[JsonObject]:
    """Every live node's report of itself, asked before anything is planned (``make size`` on a fleet); the
    process stays joined for the runs that follow (Ray joins once per process)."""
    return node_reports(connect(cfg))
