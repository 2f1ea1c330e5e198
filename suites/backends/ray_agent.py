"""The node side of ``backend=ray``: a :class:`GuestAgent` actor holds one guest process and relays its lines;
the runner's :class:`RemotePipe` polls it (and hands its CPU/RSS readings to the sampler)."""

from __future__ import annotations

import os
import shutil
import socket
import tempfile
import time
from pathlib import Path
from typing import Any

from gpu_probe import procfs
from gpu_probe.inventory import git_sha
from gpu_probe.sampler import NAN, ProcessTree, RemoteUsage
from suites.backends.handle import REPO_ROOT, GuestHandle, GuestPipe
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


class GuestAgent:
    """Lives on a Ray node as an actor: one guest process there, relayed line by line."""

    def __init__(self) -> None:
        self.log_path = Path(tempfile.mkdtemp(prefix="gmb-guest-")) / "guest.log"
        self.pipe = GuestPipe(self.log_path)
        self.tree: ProcessTree | None = None
        self._usage = (NAN, NAN)
        self._next_read = self._next_refresh = 0.0

    def node(self) -> dict[str, Any]:
        import ray

        ctx = ray.get_runtime_context()
        return {"node_id": ctx.get_node_id(), "host": socket.gethostname(), "ip": ray.util.get_node_ip_address(),
                "cpus": sorted(os.sched_getaffinity(0)), "gpus": [str(g) for g in ctx.get_accelerator_ids().get(
                    "GPU", [])], "host_key": host_key(), "suite_sha": git_sha(REPO_ROOT),
                "suite_dir": str(REPO_ROOT)}

    def start(self, spec_line: str) -> int:
        pid = self.pipe.start(GuestSpec.from_line(spec_line), keep_lines=True)
        self.tree = ProcessTree(pid)
        return pid

    def send(self, line: str) -> None:
        self.pipe.send(line)

    def poll(self) -> dict[str, Any]:
        code = self.pipe.returncode()  # first: once it is set, every line the guest wrote has been read
        self.pipe.drain()  # the same events, kept as lines to relay
        cpu, rss = self.usage()
        return {"lines": self.pipe.drain_lines(), "returncode": code, "cpu_pct": cpu, "rss_MiB": rss,
                "log_tail": self.pipe.log_tail() if code is not None else ""}

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

    def send(self, line: str) -> None:
        if self.pid is not None and not self._killed:
            self.actor.send.remote(line)  # an actor runs one caller's calls in order: spec, then go

    def drain(self) -> list[dict[str, Any]]:
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
        return [ev for ev in map(parse_event, snap["lines"]) if ev is not None]

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
