"""Tests of ``suites/run/plan.py``."""

from __future__ import annotations

import pytest

from suites.backends.placement import Placement
from suites.errors import ConfigError
from suites.run.plan import shm_problem, with_ranks


def test_a_small_dev_shm_is_refused_for_nccl_ranks_with_the_fix():
    problem = shm_problem(4, 64 * 2**20)  # a container's default
    assert problem is not None and problem.startswith("workload.ranks=4: /dev/shm holds 64 MiB")
    assert "--ipc=host or --shm-size=1g" in problem
    assert shm_problem(4, 16 * 2**30) is None and shm_problem(2, 600 * 2**20) is None


def test_more_ranks_than_gpus_is_refused_before_start():
    p = Placement("g0", [0], [0], ["GPU-a"])
    assert with_ranks({"ranks": 0}, p, 1)["ranks"] == 1
    with pytest.raises(ConfigError, match="workload.ranks=2: guest g0 gets 1 GPU"):
        with_ranks({"ranks": 2}, p, 1)
    assert with_ranks({"ranks": 2}, Placement("g0", [0], [], []), 1)["ranks"] == 2  # CPU ranks stand in
