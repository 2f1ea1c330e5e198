"""Tests of ``suites/guest/setup.py``: what a guest process gets from the host before its workload touches a
framework (its thread counts, its GPUs only, the placement's MPS limits), what it reports seeing of them, and its
workload built from the spec."""

from __future__ import annotations

import os

from suites.guest import setup
from suites.guest.protocol import GuestSpec


def spec(**kw) -> GuestSpec:
    base = {"guest_id": "g0", "profile": "m60-2q", "workload": "fixed-step",
            "workload_config": {"step_ms": 1.0, "images": 64}, "data": {}, "vcpus": [0, 1, 2], "gpus": [],
            "framebuffer_MiB": 2048, "memory_MiB": 4096, "seed": 7}
    return GuestSpec(**{**base, **kw})


def test_a_guests_threads_are_its_vcpus_and_it_sees_only_its_own_gpus():
    env = setup.environment(spec(gpus=["GPU-aaa", "GPU-bbb"]))
    assert {env[v] for v in setup.THREAD_VARS} == {"3"} and env["LP_NUM_THREADS"] == "3"
    assert env["CUDA_VISIBLE_DEVICES"] == "GPU-aaa,GPU-bbb" and env["CUDA_DEVICE_ORDER"] == "PCI_BUS_ID"
    assert setup.environment(spec())["CUDA_VISIBLE_DEVICES"] == ""  # no GPU: every GPU hidden, not all shown
    assert setup.environment(spec(vcpus=[]))["OMP_NUM_THREADS"] == "1"


def test_the_placements_mps_limits_reach_the_guest_and_it_reports_what_it_saw(monkeypatch):
    env = setup.environment(spec(env={"CUDA_MPS_ACTIVE_THREAD_PERCENTAGE": "25"}))
    assert env["CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"] == "25"
    monkeypatch.setenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", "25")
    monkeypatch.delenv("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT", raising=False)
    assert setup.sharing_seen() == {"mps_active_thread_pct": "25"}


def test_applying_a_guests_resources_pins_its_cores_and_sets_its_environment(monkeypatch):
    pinned: list[tuple[int, list[int]]] = []
    monkeypatch.setattr(os, "sched_setaffinity", lambda pid, cores: pinned.append((pid, list(cores))))
    monkeypatch.setattr(os, "environ", dict(os.environ))  # this test process's own stays as it was
    setup.apply_resources(spec(vcpus=[1]))
    assert pinned == [(0, [1])] and os.environ["OMP_NUM_THREADS"] == "1" and os.environ["CUDA_VISIBLE_DEVICES"] == ""


def test_the_workload_is_built_from_the_spec_for_its_rank():
    workload, cfg = setup.make_workload(spec(), rank=1, world=2)
    assert cfg.step_ms == 1.0 and workload.ctx.guest_id == "g0" and workload.ctx.framebuffer_MiB == 2048
    assert (workload.ctx.rank, workload.ctx.world_size, workload.ctx.seed, workload.ctx.vcpus) == (1, 2, 7, [0, 1, 2])
