"""Everything that can fail before a process starts: inventory, placement, data, the guests' specs."""

from __future__ import annotations

import dataclasses
import os
import random
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from omegaconf import OmegaConf

from gpu_probe import inventory
from gpu_probe.inventory import Inventory
from gpu_probe.shapes import JsonObject
from suites.backends import mps
from suites.backends.base import Backend
from suites.backends.corelock import CoreLease, CoresHeld, CoresTaken, Ticket, waiting
from suites.backends.factory import backend_for
from suites.backends.placement import Placement
from suites.config import stand_in
from suites.config.compose import RunConfig
from suites.config.schema import BackendName, BenchConfig, Sharing
from suites.data.options import DataConfig
from suites.errors import ConfigError
from suites.guest.protocol import GuestSpec
from suites.validity import NOT_ENFORCED
from suites.workloads import workload_class
from suites.workloads.base import Workload, WorkloadConfig

T = TypeVar("T")


@dataclass
class Plan:
    """A scenario run ready to start: where each guest goes and what it is told."""

    run: RunConfig
    inventory: Inventory
    placements: list[Placement]
    specs: list[GuestSpec]
    data: JsonObject  # where the data came from (source, root), merged over the guest groups
    backend: Backend

    @property
    def cfg(self) -> BenchConfig:
        return self.run.cfg


def plan(run: RunConfig, inv: Inventory | None = None, for_gpu: bool | None = None) -> Plan:
    """Place every guest and resolve every group's data; PlacementError / DataError / ConfigError otherwise.
    ``inv``: this host's inventory (collected here unless given); ``for_gpu``: whether a synthetic stand-in has
    the real data set's size (unless given: where this run's guests have GPUs; a comparison gives one answer for
    all its phases, so they train the same work)."""
    cfg = run.cfg
    inv = inv if inv is not None else inventory.collect()
    played_mps = cfg.sharing is Sharing.mps and not inv.has_gpu and bool(cfg.stand_in)  # a rehearsal's: said
    if cfg.sharing is Sharing.mps and not played_mps:  # the run's own daemon is started later, by execute: can it be?
        if not inv.has_gpu:
            raise ConfigError(f"sharing=mps needs an NVIDIA GPU; this host has none ({inv.gpu_status})")
        mps.control_binary()
    backend = backend_for(cfg)
    placements = backend.place(cfg.profile, sum(g.guests for g in run.groups), inv)
    said = [stand_in.played_note(cfg.stand_in)] if cfg.stand_in else []
    for p in placements if said else []:  # every guest's figures say what played them
        p.note = "; ".join(x for x in (p.note, *said, stand_in.MPS_NOTE if played_mps else "") if x)
    specs: list[GuestSpec] = []
    sources: list[JsonObject] = []
    for group in run.groups:
        missing = workload_class(group.workload.name).missing()
        if missing:
            raise ConfigError(f"workload {group.workload.name} needs {', '.join(missing)}, not installed in this "
                              "Python; pip install -e '.[<extra>]' (or bring its wheels to a GPU host)")
        plugin = workload_class(group.workload.name)
        gpus = any(p.gpus for p in placements) if for_gpu is None else for_gpu
        data = plugin.resolve_data(group.workload, data_for_device(cfg.data, plugin, gpus), cfg.seed)
        backend.check_data(data)
        specs += build_specs(cfg, group.workload, placements[len(specs): len(specs) + group.guests], data,
                             first=len(specs))
        sources.append(data)
    if len(sources) == 1:
        return Plan(run, inv, placements, specs, sources[0], backend)
    merged = {"source": " + ".join(str(d.get("source", "none")) for d in sources),
              "root": ", ".join(str(d.get("root", "-")) for d in sources)}
    return Plan(run, inv, placements, specs, merged, backend)


def data_for_device(data: DataConfig, plugin: type[Workload], gpus: bool) -> DataConfig:
    """With ``gpus`` (guests that train on GPUs), a synthetic stand-in has the real data set's training images
    (CIFAR-10's 50,000; MNIST's 60,000) unless data.synthetic_train says otherwise: a CPU-sized set is a fraction of
    a second of a GPU's epoch. On a CPU host the datasets' own smaller sizes stay."""
    dataset = plugin.dataset
    if data.synthetic_train is not None or dataset is None or not dataset.real_train or not gpus:
        return data
    return dataclasses.replace(data, synthetic_train=dataset.real_train)


def build_specs(cfg: BenchConfig, workload: WorkloadConfig, placements: list[Placement], data: JsonObject,
                first: int = 0) -> list[GuestSpec]:
    workload_cfg: Any = OmegaConf.to_container(OmegaConf.structured(workload), enum_to_str=True)
    specs = [GuestSpec(guest_id=p.guest_id, profile=cfg.profile.name, workload=workload.name,
                      workload_config=with_ranks(workload_cfg, p, cfg.profile.gpus), data=data, vcpus=p.vcpus,
                      gpus=p.gpus,
                      framebuffer_MiB=cfg.profile.framebuffer_MiB, memory_MiB=cfg.profile.memory_MiB,
                      seed=cfg.seed + first + i, repeats=cfg.repeats, profile_gpus=cfg.profile.gpus, env=p.env,
                      peer_timeout_s=peer_timeout_s(cfg.scenario.start_timeout_s, cfg.scenario.timeout_s))
             for i, p in enumerate(placements)]
    ranks = max([int(s.workload_config.get("ranks") or 1) for s in specs if s.gpus], default=1)
    if cfg.backend is BackendName.local and ranks > 1:  # ranks on this host share its /dev/shm
        problem = shm_problem(ranks, shutil.disk_usage("/dev/shm").total if os.path.isdir("/dev/shm") else 0)
        if problem:
            raise ConfigError(problem)
    return specs


SHM_PER_RANK = 256 * 2**20  # NCCL's shared-memory transport: its buffers per peer and channel (NVIDIA: --shm-size=1g)


def shm_problem(ranks: int, shm_bytes: int) -> str | None:
    """Why NCCL's ranks cannot share this host's /dev/shm, or None: a container's default 64 MB ends NCCL with
    'unhandled system error' after the guests started; said here, before the first GPU second."""
    need = min(4 * SHM_PER_RANK, ranks * SHM_PER_RANK)
    if shm_bytes >= need:
        return None
    return (f"workload.ranks={ranks}: /dev/shm holds {shm_bytes / 2**20:.0f} MiB, NCCL's shared-memory transport "
            f"needs about {need / 2**20:.0f} MiB (a container: --ipc=host or --shm-size=1g; or NCCL_SHM_DISABLE=1, "
            "slower)")


def peer_timeout_s(start_timeout_s: float, timeout_s: float) -> float:
    """The collective timeout of a guest's ranks: longer than any wait a peer can see (every guest reaching the
    start barrier, then the whole run), so only the runner's own limits end a run. A fixed 5 minutes equalled the
    start timeout: peers waiting at the barrier while another guest compiled could be killed by NCCL's watchdog."""
    return start_timeout_s + timeout_s + 60.0


def with_ranks(workload_cfg: JsonObject, placement: Placement, profile_gpus: int) -> JsonObject:
    """``workload.ranks=0`` resolved: one data-parallel rank per GPU the guest gets (per GPU of its profile on a
    host without GPUs, where CPU ranks stand in), so a 4-GPU guest trains on all four."""
    out = dict(workload_cfg)
    if out.get("ranks") == 0:
        out["ranks"] = max(1, len(placement.gpus) or profile_gpus)
    if placement.gpus and (out.get("ranks") or 1) > len(placement.gpus):  # NCCL: one GPU per rank, never two
        raise ConfigError(f"workload.ranks={out['ranks']}: guest {placement.guest_id} gets {len(placement.gpus)} "
                          "GPU(s), and each data-parallel rank needs a GPU of its own")
    return out


def require_enforced(plans: list[Plan]) -> None:
    """``strict=true``: refuse, before anything starts, a run whose profile this host would not enforce."""
    for p in plans:
        weak = [pl for pl in p.placements if pl.validity == NOT_ENFORCED]
        if weak:
            where = f"phase {p.run.label}: " if p.run.label else ""
            raise ConfigError(f"strict=true: {where}profile {p.cfg.profile.name} is not enforced on this host "
                              f"({weak[0].note or 'no GPU'}); its figures would come from a CPU stand-in "
                              f"(drop strict=true to run it labelled '{NOT_ENFORCED}')")


def lease_cores(plans: list[Plan], run: Path) -> CoreLease:
    """Hold, for as long as the command runs, every host core these plans pin guests to (processes and VMs on this
    host: a Ray node's cores are Ray's to share out). CoresTaken if another run took one since planning."""
    cores = {c for p in plans if p.backend.holds_host_cores for pl in p.placements for c in pl.vcpus}
    return CoreLease(str(run)).acquire(sorted(cores))


WAIT_REPORT_S = 30.0  # a run waiting for cores says so when who holds them changes, and at least this often
LINE = 120  # the waiting line's columns: one line, whatever the holders' command lines


def plan_and_lease(make: Callable[[], T], plans_of: Callable[[T], list[Plan]], run: Path, wait_s: float = 0.0,
                   on_wait: Callable[[str], None] = lambda line: None, attempts: int = 5) -> tuple[T, CoreLease]:
    """``make()`` (placement peeks at the cores other runs hold) and the lease on the cores it chose; when another
    run started at the same moment took one in between, place again (it now sees that run's cores). A run that
    does not fit beside the others' cores waits up to ``wait_s`` for them, in this host's queue (corelock.Ticket:
    first come, first served; a run that starts while others wait queues behind them); ``on_wait`` says so in one
    line when who holds them changes and at least every ``WAIT_REPORT_S`` seconds."""
    start = time.monotonic()
    deadline, next_say, last, ticket = start + wait_s, start, "", None
    try:
        while True:
            if ticket is None and wait_s > 0 and waiting():
                ticket = Ticket()  # others wait already: behind them
            ahead, refused = ticket.ahead() if ticket is not None else 0, None
            try:
                if not ahead:
                    return _plan_and_lease_once(make, plans_of, run, attempts)
                held = f"{ahead} run(s) that began waiting earlier (first come, first served)"
            except CoresHeld as exc:
                held, refused = exc.held, exc
            now = time.monotonic()
            if now >= deadline:
                if wait_s <= 0 and refused is not None:  # no wait asked: the refusal itself, with its advice
                    raise refused
                raise CoresHeld(f"waited {wait_s:g} s (wait_for_cores_s) for cores, still held by {held}: run again "
                                "when it ends", held) from refused
            ticket = ticket or Ticket()
            if now >= next_say or held != last:
                on_wait(waiting_line(now - start, wait_s, held))
                next_say, last = now + WAIT_REPORT_S, held
            time.sleep(random.uniform(0.2, 0.6))
    finally:
        if ticket is not None:
            ticket.close()


def waiting_line(waited: float, wait_s: float, held: str) -> str:
    """'waiting for cores: 10 s of 600 s (wait_for_cores_s); held by <who>', one line of at most LINE columns."""
    line = f"waiting for cores: {waited:.0f} s of {wait_s:g} s (wait_for_cores_s); held by {held}"
    return line if len(line) <= LINE else line[:LINE - 1].rsplit(" ", 1)[0] + " …"  # whole words


def _plan_and_lease_once(make: Callable[[], T], plans_of: Callable[[T], list[Plan]], run: Path,
                         attempts: int) -> tuple[T, CoreLease]:
    for attempt in range(1, attempts + 1):
        made = make()
        try:
            return made, lease_cores(plans_of(made), run)
        except CoresTaken:
            if attempt == attempts:
                raise
            time.sleep(random.uniform(0.01, 0.2))  # two runs that collided do not collide again in lockstep
    raise AssertionError("unreachable")
