"""Tests of ``suites/workloads/torch_common.py``."""

from __future__ import annotations

import pytest

from suites.errors import BenchError
from suites.workloads import torch_common
from suites.workloads.torch_common import allocator_fraction, cap_framebuffer, rank_device
from tests.support.fakes import fake_torch


def test_the_cap_note_says_what_it_does_not_count_under_ddp():
    t = fake_torch(2)
    context = lambda torch, device: (500.0, "stand-in")  # noqa: E731
    one = torch_common.cap_framebuffer(t, torch_common.rank_device(t, True, 0), 8192, context)
    two = torch_common.cap_framebuffer(t, torch_common.rank_device(t, True, 1), 8192, context, world=2)
    assert "NCCL" not in one["framebuffer_cap"]
    assert two["framebuffer_cap"].endswith("; not counted: NCCL's communicator buffers of the 2 ranks, made after "
                                           "this (outside torch's allocator)")


def test_c1_judges_the_guests_self_reported_memory_where_nvml_cannot_attribute_it():
    from suites.gpucheck import judges as judge

    def guest(gid: str, own: float) -> dict:
        return {"result": {"guest_id": gid, "status": "ok", "error": None, "info": {"device": "H100"},
                           "metrics": {"gpu_mem_self_MiB": own}, "repeats": []}, "sampled": {}}

    res = {"status": "ok", "host_metrics": {}, "guests": [guest(f"g{i}", 2000.0) for i in range(4)],
           "sampler": {"notes": ["NVML reports pids of another PID namespace: per-guest GPU figures not attributed"]}}
    verdict = judge.caps(res, 2048)
    assert verdict.result == "ok" and verdict.figure.endswith("of 2048 MiB each (self-reported)")
    assert judge.attribution(res).result.endswith("; c1 judged the guests' self-reported memory")


def test_each_rank_trains_on_its_own_gpu_and_caps_that_one():
    t = fake_torch(4)
    devices = [rank_device(t, True, r) for r in range(4)]
    assert [d.index for d in devices] == [0, 1, 2, 3]  # a bare "cuda" put every rank on GPU 0
    no_context = lambda torch, device: (0.0, "stand-in")  # noqa: E731
    assert cap_framebuffer(t, devices[2], 20480, no_context)["framebuffer_cap"].startswith("20480 MiB")
    assert t.cuda.fractions == {2: 0.25}  # the cap lands on rank 2's GPU, not on device 0
    with pytest.raises(RuntimeError, match="rank 4 has no GPU of its own"):
        rank_device(t, True, 4)
    assert rank_device(t, False, 0).type == "cpu"


def test_the_cap_counts_the_cuda_context_as_a_vgpu_framebuffer_does():
    """A stand-in device-memory reading (no GPU here): 610 MiB of CUDA context on an 80 GiB GPU."""
    t = fake_torch(1)
    context = lambda torch, device: (610.0, "stand-in reading")  # noqa: E731
    info = cap_framebuffer(t, rank_device(t, True, 0), 2048, context)
    assert t.cuda.fractions == {0: pytest.approx((2048 - 610) / 81920)}  # (framebuffer - context) / total
    assert info == {"framebuffer_cap": "2048 MiB: allocator 1438 MiB + CUDA context 610 MiB (stand-in reading)",
                    "cuda_context_MiB": 610.0, "allocator_cap_MiB": 1438.0}
    with pytest.raises(BenchError, match=r"^512 MiB framebuffer < 610 MiB CUDA context on this GPU: nothing left"):
        cap_framebuffer(t, rank_device(t, True, 0), 512, context)
    assert allocator_fraction(81920, 0, 81920) == 1.0 and allocator_fraction(10**6, 610, 81920) == 1.0
