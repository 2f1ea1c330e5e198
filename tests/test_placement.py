"""Placement arithmetic: vCPUs, memory, passthrough GPUs and vGPU slots."""

import pytest

from gpu_probe.inventory import Inventory
from suites.errors import PlacementError
from suites.profiles import ProfileConfig, ProfileKind
from suites.runner.placement import gpu_capacity, place


def host(gpus: int = 0, gpu_mem_MiB: float = 8192.0) -> Inventory:
    devices = [{"index": i, "name": "Tesla M60", "uuid": f"GPU-{i}", "mem_total_MiB": gpu_mem_MiB}
               for i in range(gpus)]
    return Inventory("h", "Linux", "3.11", "cpu", 8, 8, 8, 65536.0, gpus=devices)


def vgpu(fb: int, per_gpu: int, vcpus: int = 1) -> ProfileConfig:
    return ProfileConfig(name=f"m60-{fb // 1024}q", kind=ProfileKind.vgpu, gpus=1, framebuffer_MiB=fb,
                         max_per_gpu=per_gpu, vcpus=vcpus, memory_MiB=1024)


def test_guests_get_disjoint_cpus_until_overcommit_is_allowed():
    prof = ProfileConfig(name="cpu", kind=ProfileKind.cpu, vcpus=2, memory_MiB=1024)
    ps = place(prof, 3, host(), list(range(6)))
    assert [p.vcpus for p in ps] == [[0, 1], [2, 3], [4, 5]]
    with pytest.raises(PlacementError, match="4 guest\\(s\\) x 2 vCPUs = 8 vCPUs > 6 host cores"):
        place(prof, 4, host(), list(range(6)))
    over = place(prof, 4, host(), list(range(6)), cpu_overcommit=True)
    assert over[3].vcpus == [0, 1]


@pytest.mark.parametrize("fb,per_gpu,expected", [(1024, 8, 8), (2048, 4, 4), (4096, 2, 2), (8192, 1, 1), (512, 16, 16)])
def test_m60_capacity_per_gpu(fb: int, per_gpu: int, expected: int):
    assert gpu_capacity(vgpu(fb, per_gpu), 8192.0) == expected


def test_capacity_is_bounded_by_framebuffer_on_a_smaller_gpu():
    assert gpu_capacity(vgpu(2048, 4), 5000.0) == 2  # 5000 // 2048


def test_vgpu_guests_fill_one_gpu_before_the_next():
    ps = place(vgpu(2048, 4), 6, host(gpus=2), list(range(8)))
    assert [p.gpu_indices for p in ps] == [[0], [0], [0], [0], [1], [1]]
    assert ps[4].gpus == ["GPU-1"]  # CUDA_VISIBLE_DEVICES by UUID


def test_impossible_vgpu_placement_names_the_numbers():
    with pytest.raises(PlacementError, match="3 guest\\(s\\) of m60-8q .* > capacity 2 .*GPU0: 1, GPU1: 1"):
        place(vgpu(8192, 1), 3, host(gpus=2), list(range(8)))


def test_passthrough_takes_whole_gpus():
    prof = ProfileConfig(name="passthrough-2gpu", kind=ProfileKind.passthrough, gpus=2, vcpus=1, memory_MiB=1024)
    ps = place(prof, 2, host(gpus=4), list(range(8)))
    assert [p.gpu_indices for p in ps] == [[0, 1], [2, 3]]
    with pytest.raises(PlacementError, match="6 GPUs > 4"):
        place(prof, 3, host(gpus=4), list(range(8)))


def test_no_gpu_host_runs_gpu_profiles_on_cpu_and_says_so():
    ps = place(vgpu(8192, 1), 2, host(gpus=0), list(range(8)))
    assert all(p.gpus == [] and "no GPU" in p.note for p in ps)
    assert ps[0].gpu_label == "no GPU"


def test_guest_memory_must_fit_the_host():
    with pytest.raises(PlacementError, match="host memory"):
        place(vgpu(1024, 8), 4, host(gpus=1), list(range(8)), host_mem_MiB=3000)
