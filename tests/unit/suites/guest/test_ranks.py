"""Tests of ``suites/guest/ranks.py``: how many ranks a guest runs; a rank alone (no process group). A real
two-rank group is e2e/test_ranks.py's (it starts processes)."""

from __future__ import annotations

import math
from types import SimpleNamespace

from suites.guest import ranks
from suites.guest.protocol import GuestSpec


def spec(gpus: list[str], profile_gpus: int) -> GuestSpec:
    s = GuestSpec("g0", "passthrough-2gpu", "mnist-torch", {}, {}, [], gpus, None, None)
    s.profile_gpus = profile_gpus
    return s


def test_a_guest_runs_the_ranks_asked_else_one_per_gpu_else_per_profile_gpu():
    assert ranks.world_size(SimpleNamespace(ranks=3), spec(["GPU-a"], 1)) == 3
    assert ranks.world_size(SimpleNamespace(ranks=0), spec(["GPU-a", "GPU-b"], 2)) == 2
    assert ranks.world_size(SimpleNamespace(ranks=0), spec([], 4)) == 4  # no GPU here: CPU ranks stand in
    assert ranks.world_size(SimpleNamespace(), spec([], 0)) == 1


def test_without_a_process_group_a_rank_is_alone():
    assert ranks.slowest(0.25, None) == 0.25 and math.isnan(ranks.slowest(math.nan, None))
    ranks.barrier()  # no group: nothing to wait for
    ranks.shutdown()
