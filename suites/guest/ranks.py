"""Data-parallel ranks inside one guest (torchrun-style process group).

The guest's main process is rank 0 and speaks the protocol; ranks 1..N-1 are
spawned children in the same process group (so killing the guest kills them)
that train in lockstep through torch.distributed: NCCL with one GPU per rank,
gloo on the CPU. Barriers mirror the guest's start barrier: every rank has
prepared before rank 0 says ``ready``, and none trains before ``go``.
"""

from __future__ import annotations

import socket
import sys
from typing import Any

from suites.guest.protocol import GuestSpec
from suites.guest.setup import die_with_parent, make_workload
from suites.workloads import timing
from suites.workloads.timing import StepMeter


def world_size(cfg: Any, spec: GuestSpec) -> int:
    """``workload.ranks``; 0 means one rank per GPU of the guest, or per GPU of its profile
    when the host has none (CPU ranks over gloo then stand in, so the same path runs)."""
    ranks = int(getattr(cfg, "ranks", 1) or 0)
    return ranks if ranks > 0 else max(1, len(spec.gpus) or spec.profile_gpus)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def init(rank: int, world: int, port: int, use_cuda: bool, timeout_s: float) -> None:
    from datetime import timedelta

    import torch
    import torch.distributed as dist

    if use_cuda:
        torch.cuda.set_device(rank)
    # The run's own limits bound every wait (GuestSpec.peer_timeout_s): a rank that dies leaves the others in a
    # collective until the runner's timeout ends the guest, never NCCL's watchdog first.
    dist.init_process_group("nccl" if use_cuda else "gloo", init_method=f"tcp://127.0.0.1:{port}",
                            rank=rank, world_size=world, timeout=timedelta(seconds=timeout_s))


def barrier() -> None:
    dist = initialized()
    if dist is not None:
        dist.barrier()


def slowest(step_s: float, workload: Any) -> float:
    """The largest ``step_s`` over the ranks (each rank's own where there is one): every rank then sizes its run
    the same way. NaN counts as 0."""
    dist = initialized()
    if dist is None:
        return step_s
    import torch

    figure = torch.tensor([step_s if step_s == step_s else 0.0], dtype=torch.float64,
                          device=getattr(workload, "device", "cpu"))
    dist.all_reduce(figure, op=dist.ReduceOp.MAX)
    return float(figure.item())


def shutdown() -> None:
    dist = initialized()
    if dist is not None:
        dist.destroy_process_group()


def initialized() -> Any:
    """torch.distributed where a process group is up, else None, without importing torch: a single-rank guest
    that needs no torch (idle, graphics) would pay 1.4 s of CPU per guest to import it here, ~27 s in a TCG VM."""
    dist = sys.modules.get("torch.distributed")
    return dist if dist is not None and dist.is_initialized() else None


def spawn_peers(spec: GuestSpec, world: int, port: int) -> list[Any]:
    import torch.multiprocessing as mp

    ctx = mp.get_context("spawn")
    peers = [ctx.Process(target=peer_main, args=(spec.to_line(), rank, world, port), daemon=True)
             for rank in range(1, world)]
    for p in peers:
        p.start()
    return peers


def peer_main(spec_line: str, rank: int, world: int, port: int) -> None:
    """Ranks 1..N-1: the same work as rank 0, silently (rank 0 reports)."""
    die_with_parent()
    spec = GuestSpec.from_line(spec_line)
    workload, cfg = make_workload(spec, rank, world)
    init(rank, world, port, bool(spec.gpus), spec.peer_timeout_s)
    try:
        workload.prepare()
        timing.calibrate(workload, cfg, agree=lambda step_s: slowest(step_s, workload),  # in step with rank 0's
                         earlier=spec.calibration, margin=timing.RANKS_MARGIN)
        barrier()  # prepared
        barrier()  # released at the start barrier
        for r in range(spec.repeats):
            if r:
                workload.build()
            meter = StepMeter(cfg.warmup_steps, workload.total_steps())
            meter.start()
            workload.train(meter)
            barrier()  # rank 0 evaluates while the others wait
    finally:
        shutdown()
