"""The node side of ``backend=ray``: a :class:`GuestAgent` actor holds one guest process and relays its lines;
the runner's :class:`RemotePipe` polls it (and hands its CPU/RSS readings to the sampler)."""

from __future__ import annotations

import os
import shutil
import socket
import time
from pathlib import Path
from typing import Any

from gpu_probe import inventory, procfs
from gpu_probe.inventory import git_sha
from gpu_probe.nvml import Nvml
from gpu_probe.remote import NAN, RemoteUsage, node_columns
from gpu_probe.sampler import ProcessTree, Sampler
from gpu_probe.shapes import JsonObject
from gpu_probe.stats import ClockOffset
from gpu_probe.trace import lib_from_env
from suites.backends.handle import REPO_ROOT, GuestHandle, GuestPipe
from suites.backends.leftovers import own_dir, state_root
from suites.errors import first_line
from suites.guest.protocol import GuestSpec, parse_event

LOG_LIMIT = 5 * 1024 * 1024  # bytes of a guest log brought back to the run directory
# A remote guest is asked for news 5 times a second: each ask is an RPC that costs the guests' cores
# (20 Hz cost ~17 % of a guest's images/s on 2 cores); the barrier waits at most this long more.
POLL_S = 0.2


def host_key() -> str:
    """Same kernel boot and PID namespace: pids seen there are pids seen here."""
    try:
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
        return f"{boot}/{os.readlink('/proc/self/ns/pid')}"
    except OSError:
        return f"{socket.gethostname()}/?"


def node_report(ray_gpus: float) -> JsonObject:
    """What this node is, for ray.placement=per-node: its GPUs through gpu_probe here (NVML of the VM, or the
    trace ``$GPU_PROBE_NVML_TRACE`` names on a node that stands in for one), vCPUs, memory, Ray's node id."""
    import ray

    lib, trace = lib_from_env()
    with Nvml(lib) as nv:
        inv = inventory.collect(nv)
    return {"node_id": ray.get_runtime_context().get_node_id(), "host": socket.gethostname(),
            "ip": ray.util.get_node_ip_address(), "cpus": sorted(os.sched_getaffinity(0)),
            "mem_MiB": inv.mem_total_MiB, "gpus": inv.gpus, "driver": inv.driver_version,
            "gpu_status": inv.gpu_status, "nvml_trace": trace, "ray_gpus": ray_gpus}


class GuestAgent:
    """Lives on a Ray node as an actor: one guest process there, relayed line by line. With ``sample_hz``
    (ray.placement=per-node: the node is the guest's VM) it also samples the node's GPUs at that rate."""

    def __init__(self, sample_hz: float = 0.0) -> None:
        # in the node's benchmark state: a folder a killed runner or a dead node left is removed by the next agent
        self.log_path = own_dir("gmb-guest-", state_root() / "ray") / "guest.log"
        self.pipe = GuestPipe(self.log_path)
        self.tree: ProcessTree | None = None
        self._usage = (NAN, NAN)
        self._next_read = self._next_refresh = 0.0
        self.sample_hz = sample_hz
        self.sampler: Sampler | None = None
        self.trace = ""
        self._shipped = 0
        self._guest_id = ""

    def now(self) -> float:
        """This node's clock, for the runner's round trips (:func:`suites.backends.ray.cluster.measure_offset`)."""
        return time.time()

    def node(self) -> JsonObject:
        import ray

        ctx = ray.get_runtime_context()
        return {"node_id": ctx.get_node_id(), "host": socket.gethostname(), "ip": ray.util.get_node_ip_address(),
                "cpus": sorted(os.sched_getaffinity(0)), "gpus": [str(g) for g in ctx.get_accelerator_ids().get(
                    "GPU", [])], "host_key": host_key(), "suite_sha": git_sha(REPO_ROOT),
                "suite_dir": str(REPO_ROOT)}

    def start(self, spec_line: str) -> int:
        spec = GuestSpec.from_line(spec_line)
        pid = self.pipe.start(spec, keep_lines=True)
        self.tree = ProcessTree(pid)
        if self.sample_hz:
            lib, self.trace = lib_from_env()
            self._guest_id = spec.guest_id
            self.sampler = Sampler(self.sample_hz, nvml=Nvml(lib)).__enter__()
            self.sampler.watch(spec.guest_id, pid)
        return pid

    def samples(self) -> JsonObject:
        """The node sampler's rows since the last call (node epoch time ``t``) and what it knows about itself."""
        if self.sampler is None:
            return {}
        s = self.sampler
        shipped = s.ship(self._shipped, lambda r: node_columns(r, self._guest_id))
        self._shipped += len(shipped["rows"])
        return {**shipped, "trace": self.trace, "notes": [s.attribution_note] if s.attribution_note else []}

    def send(self, line: str) -> None:
        self.pipe.send(line)

    def poll(self) -> JsonObject:
        code = self.pipe.returncode()  # first: once it is set, every line the guest wrote has been read
        self.pipe.drain()  # the same events, kept as lines to relay
        cpu, rss = self.usage()
        return {"lines": self.pipe.drain_lines(), "returncode": code, "cpu_pct": cpu, "rss_MiB": rss,
                "log_tail": self.pipe.log_tail() if code is not None else "", "node": self.samples()}

    def usage(self) -> tuple[float, float]:
        """The guest tree's CPU % and RSS, read at most 5 times a second (polls come faster)."""
        now = time.monotonic()
        if self.tree is not None and now >= self._next_read:
            if now >= self._next_refresh:  # new children (ranks, loaders) counted within a second
                self.tree.refresh(procfs.children_map())
                self._next_refresh = now + 1.0
            cpu, rss, _ = self.tree.read()
            self._usage, self._next_read = (cpu, rss), now + 0.2
        return self._usage

    def finish(self) -> str:
        """Kill the guest's process group; its log text, with the node-local copy removed."""
        self.pipe.kill()
        if self.sampler is not None:
            self.sampler.__exit__(None, None, None)
        try:
            with self.log_path.open("rb") as f:
                return f.read(LOG_LIMIT).decode(errors="replace")
        except OSError:
            return ""
        finally:
            shutil.rmtree(self.log_path.parent, ignore_errors=True)


class RemotePipe:
    """The runner's end of a :class:`GuestAgent`: non-blocking polls, readings into the sampler."""

    def __init__(self, actor: Any, log_path: Path) -> None:
        self.actor = actor
        self.log_path = log_path
        self.pid: int | None = None
        self.usage = RemoteUsage()
        self.same_host = False
        self._pending: Any = None
        self._code: int | None = None
        self._tail = ""
        self._rss = 0.0
        self._killed = False
        self._next_poll = 0.0
        self.offset: ClockOffset | None = None  # the node's clock minus this one (ray.placement=per-node)

    def send(self, line: str) -> None:
        if self.pid is not None and not self._killed:
            self.actor.send.remote(line)  # an actor runs one caller's calls in order: spec, then go

    def drain(self) -> list[JsonObject]:
        import ray

        if self.pid is None or self._code is not None or self._killed:
            return []
        if self._pending is None:
            if time.monotonic() < self._next_poll:
                return []
            self._pending, self._next_poll = self.actor.poll.remote(), time.monotonic() + POLL_S
        ready, _ = ray.wait([self._pending], timeout=0)
        if not ready:
            return []
        ref, self._pending = self._pending, None
        try:
            snap = ray.get(ref)
        except Exception as exc:  # the actor or its node died
            self._code, self._tail = -9, f"Ray actor lost: {first_line(exc)}"
            self.usage.gone()
            return []
        self._rss = snap["rss_MiB"] if snap["rss_MiB"] == snap["rss_MiB"] else 0.0
        self.usage.update(snap["cpu_pct"], snap["rss_MiB"], {self.pid} if self.same_host else set())
        if snap["returncode"] is not None:
            self._code, self._tail = snap["returncode"], snap["log_tail"]
            self.usage.gone()
        self.take_node_samples(snap.get("node") or {})
        return [self.on_this_clock(ev) for ev in map(parse_event, snap["lines"]) if ev is not None]

    @property
    def offset_s(self) -> float:
        """What to take off the node's stamps: its measured offset, 0 where none was measured."""
        return self.offset.offset_s if self.offset and self.offset.n else 0.0

    def take_node_samples(self, node: JsonObject) -> None:
        if not node:
            return
        self.usage.add_rows(node.pop("rows"), self.offset_s)
        self.usage.node = {**node, "clock_offset": self.offset.text() if self.offset else "not measured"}

    def on_this_clock(self, ev: JsonObject) -> JsonObject:
        """A result's training interval, stamped on the node's clock, on the runner's: the node's offset taken off
        (the residual uncertainty is in the placement's note)."""
        if ev.get("event") != "result" or not self.offset_s:
            return ev
        result = dict(ev.get("result") or {})
        for key in ("t_train_start", "t_train_end"):
            if isinstance(result.get(key), (int, float)):
                result[key] -= self.offset_s
        return {**ev, "result": result}

    def returncode(self) -> int | None:
        return self._code

    def log_tail(self) -> str:
        return self._tail

    def rss_MiB(self) -> float:
        return self._rss

    def kill(self) -> None:
        """Stop the guest, bring its log home, then end the actor (idempotent)."""
        import ray

        if self._killed:
            return
        self._killed = True
        if self.pid is None:  # never placed or never started: no guest, no log
            ray.kill(self.actor, no_restart=True)
            return
        try:
            self.log_path.write_text(ray.get(self.actor.finish.remote(), timeout=30))
        except Exception as exc:  # a lost actor has no log to give; its guest died with it
            if not self.log_path.exists():
                self.log_path.write_text(f"[runner] guest log unavailable: {type(exc).__name__}\n")
        ray.kill(self.actor, no_restart=True)


class RayGuest(GuestHandle):
    """A guest whose process runs under a Ray actor; everything else is the local state machine."""

    pipe: RemotePipe

    def watch(self, sampler: Any) -> None:
        sampler.watch_source(self.id, self.pipe.usage)
