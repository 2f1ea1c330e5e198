"""``suites/guest/ranks.py`` with real ranks: a two-rank gloo group on the CPU agreeing on the slowest step (what
sizes every rank's run the same way), then shutting down its group."""

from __future__ import annotations

import math

from suites.guest import ranks


def agree(rank: int, world: int, port: int, step_s: float, out) -> None:
    ranks.init(rank, world, port, use_cuda=False, timeout_s=60)
    try:
        out.put((rank, ranks.slowest(step_s, None)))
        ranks.barrier()
    finally:
        ranks.shutdown()
    out.put((rank, ranks.initialized() is None))


def test_two_cpu_ranks_agree_on_the_slowest_step_and_leave_no_group():
    import torch.multiprocessing as mp

    ctx = mp.get_context("spawn")
    out, port = ctx.Queue(), ranks.free_port()
    procs = [ctx.Process(target=agree, args=(r, 2, port, s, out)) for r, s in ((0, 0.01), (1, math.nan))]
    for p in procs:
        p.start()
    got = [out.get(timeout=120) for _ in range(4)]
    for p in procs:
        p.join(timeout=60)
    assert sorted(v for _, v in got if not isinstance(v, bool)) == [0.01, 0.01]  # NaN counts as 0: the max is 0.01
    assert [v for _, v in got if isinstance(v, bool)] == [True, True] and all(p.exitcode == 0 for p in procs)
