"""Tests of ``suites/backends/placement.py``."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest

from gpu_probe.datasheet import memory_MiB
from gpu_probe.inventory import Inventory
from suites.backends.placement import gpu_capacity
from suites.backends.placement import place_on_host as place
from suites.config.profiles import GpuAccess, ProfileConfig, family
from suites.errors import PlacementError
from tests.support.helpers import REPO, compose_config
from tests.support.hosts import host


def vgpu(fb: int, per_gpu: int, vcpus: int = 1) -> ProfileConfig:
    return ProfileConfig(name=f"m60-{fb // 1024}q", gpu_access=GpuAccess.vgpu, gpus=1, framebuffer_MiB=fb,
                         max_per_gpu=per_gpu, vcpus=vcpus, memory_MiB=1024, gpu_model="Tesla M60")


def gpu(name: str, mem_MiB: float) -> dict:
    return {"name": name, "mem_total_MiB": mem_MiB}


CATALOG = sorted(p.stem for p in (REPO / "configs" / "profile").glob("*.yaml"))


NATIVE = {"M60": gpu("Tesla M60", 8129.0), "T4": gpu("Tesla T4", 15360.0), "L40S": gpu("NVIDIA L40S", 46068.0),
          "A100": gpu("NVIDIA A100-SXM4-80GB", 81920.0), "H100": gpu("NVIDIA H100 80GB HBM3", 81559.0),
          "H200": gpu("NVIDIA H200", 143771.0)}


H100 = gpu("NVIDIA H100 80GB HBM3", 81559.0)


def h100_host(**gpu_fields) -> Inventory:
    return Inventory("h", "Linux", "3.11", "cpu", 8, 8, 8, 65536.0,
                     gpus=[{"index": 0, "uuid": "GPU-0", **H100, **gpu_fields}])


@pytest.mark.parametrize("name", [n for n in CATALOG if not n.startswith(("cpu", "passthrough"))])
def test_catalog_capacity_native_and_emulated_on_an_h100(name: str):
    prof = compose_config(f"profile={name}").profile
    assert prof.framebuffer_MiB * prof.max_per_gpu <= memory_MiB(prof.gpu_model)  # none oversubscribes its own GPU
    native = gpu_capacity(prof, NATIVE[family(prof.gpu_model)])
    assert native.capacity == prof.max_per_gpu and native.emulated_on is None
    on_h100 = gpu_capacity(prof, H100)
    if family(prof.gpu_model) == "H100":
        assert on_h100.capacity == prof.max_per_gpu and on_h100.emulated_on is None
    else:
        assert on_h100.capacity == 81559 // prof.framebuffer_MiB and on_h100.emulated_on == H100["name"]


def test_m60_profiles_emulated_on_one_h100_hold_the_study_guest_counts():
    """Study: 3/6/12/24 CAD guests (+1 ML) on 4 M60 GPUs for 8Q/4Q/2Q/1Q: all fit one emulated H100."""
    h100 = Inventory("h", "Linux", "3.11", "cpu", 64, 64, 64, 524288.0,
                     gpus=[{"index": 0, "uuid": "GPU-0", **H100}])
    for name, guests in (("m60-8q", 4), ("m60-4q", 7), ("m60-2q", 13), ("m60-1q", 25)):
        prof = compose_config(f"profile={name}", "profile.vcpus=1", "profile.memory_MiB=1024").profile
        ps = place(prof, guests, h100, list(range(64)))
        assert all(p.gpu_indices == [0] for p in ps)
        assert "m60" in ps[0].note and "emulated on NVIDIA H100 80GB HBM3" in ps[0].note
    with pytest.raises(PlacementError, match="10 guest\\(s\\) of m60-8q .* > capacity 9 .*81559.0 MiB: 9 emulated"):
        place(compose_config("profile=m60-8q", "profile.vcpus=1", "profile.memory_MiB=1024").profile, 10, h100,
              list(range(64)))


def test_profile_larger_than_the_host_gpu_cannot_be_placed():
    small = Inventory("h", "Linux", "3.11", "cpu", 8, 8, 8, 65536.0,
                      gpus=[{"index": 0, "uuid": "GPU-0", **NATIVE["T4"]}])
    prof = compose_config("profile=h100-80c", "profile.vcpus=1", "profile.memory_MiB=1024").profile
    with pytest.raises(PlacementError, match="capacity 0 on this host"):
        place(prof, 1, small, list(range(8)))


def test_vgpu_guests_fill_one_gpu_before_the_next():
    ps = place(vgpu(2048, 4), 6, host(gpus=2), list(range(8)))
    assert [p.gpu_indices for p in ps] == [[0], [0], [0], [0], [1], [1]]
    assert ps[4].gpus == ["GPU-1"]  # CUDA_VISIBLE_DEVICES by UUID


def test_impossible_vgpu_placement_names_the_numbers():
    expected = "3 guest.* of m60-8q .* > capacity 2 .*GPU0 8192.0 MiB: 1, GPU1 8192.0 MiB: 1"
    with pytest.raises(PlacementError, match=expected):
        place(vgpu(8192, 1), 3, host(gpus=2), list(range(8)))


def test_no_gpu_host_runs_gpu_profiles_on_cpu_and_says_so():
    ps = place(vgpu(8192, 1), 2, host(gpus=0), list(range(8)))
    assert all(p.gpus == [] and "no GPU" in p.note for p in ps)
    assert ps[0].gpu_label == "no GPU"


def test_guest_memory_must_fit_the_host():
    with pytest.raises(PlacementError, match="host memory"):
        place(vgpu(1024, 8), 4, host(gpus=1), list(range(8)), host_mem_MiB=3000)


def test_sharing_mps_gives_each_guest_its_share_and_a_driver_memory_limit(tmp_path, monkeypatch):
    monkeypatch.setenv("CUDA_MPS_PIPE_DIRECTORY", str(tmp_path))  # no foreign daemon there
    m60 = compose_config("profile=m60-2q", "profile.vcpus=1", "profile.memory_MiB=1024").profile
    ps = place(m60, 4, h100_host(), list(range(8)), mps=True)
    # 100 / max_per_gpu (4): the fixed-share scheduler's share; the framebuffer as the pinned memory limit
    assert all(p.env == {"CUDA_MPS_ACTIVE_THREAD_PERCENTAGE": "25", "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT": "0=2048M"}
               for p in ps)
    assert all(p.validity == "emulated (MPS-enforced)" and "MPS-enforced: 25% of SMs" in p.note for p in ps)
    own = compose_config("profile=h100-20c", "profile.mps_share_pct=30", "profile.vcpus=1",
                         "profile.memory_MiB=1024").profile
    assert place(own, 1, h100_host(), list(range(8)), mps=True)[0].env["CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"] == "30"
    timeslice = place(own, 1, h100_host(), list(range(8)))[0]
    assert timeslice.env == {} and "mps_share_pct=30 not applied: sharing=timeslice" in timeslice.note


def test_a_foreign_mps_daemon_under_timeslicing_is_said(monkeypatch):
    import socket

    pipe = Path(tempfile.mkdtemp(prefix="mps-", dir="/tmp"))  # short: a socket address holds ~107 bytes
    monkeypatch.setenv("CUDA_MPS_PIPE_DIRECTORY", str(pipe))
    with socket.socket(socket.AF_UNIX) as daemon:  # a daemon listening on its control socket, as -d's does
        daemon.bind(str(pipe / "control"))
        daemon.listen()
        p = place(compose_config("profile=h100-20c").profile, 1, h100_host(), list(range(8)))[0]
    assert p.env == {} and f"an MPS daemon not started by this run answers at {pipe}" in p.note
    quit_ = place(compose_config("profile=h100-20c").profile, 1, h100_host(), list(range(8)))[0]
    assert "MPS daemon" not in quit_.note  # the socket it left behind answers no more
    shutil.rmtree(pipe)


def test_mig_profiles_get_mig_device_uuids_and_other_profiles_are_refused_on_a_mig_gpu():
    migs = [{"index": i, "name": "NVIDIA H100 80GB HBM3 MIG 1g.10gb", "uuid": f"MIG-{i}"} for i in range(2)]
    migs.append({"index": 2, "name": "NVIDIA H100 80GB HBM3 MIG 3g.40gb", "uuid": "MIG-big"})
    inv = h100_host(mig_mode="enabled", mig_devices=migs)
    one = compose_config("profile=h100-mig-1-10c", "profile.vcpus=1", "profile.memory_MiB=1024").profile
    ps = place(one, 2, inv, list(range(8)))
    assert [p.gpus for p in ps] == [["MIG-0"], ["MIG-1"]] and all(p.validity == "enforced" for p in ps)
    with pytest.raises(PlacementError, match="needs a free 1g MIG device per guest on GPU0"):
        place(one, 3, inv, list(range(8)))
    with pytest.raises(PlacementError, match="GPU0 has MIG enabled: .* not h100-20c"):
        place(compose_config("profile=h100-20c").profile, 1, inv, list(range(8)))
