"""Tests of ``suites/backends/ray/fleet.py``."""

from __future__ import annotations

import pytest

from gpu_probe import inventory
from gpu_probe.nvml import Nvml
from gpu_probe.trace import ReplayNvml
from suites.backends.ray.fleet import offer, place_per_node, seen
from suites.errors import PlacementError
from suites.validity import ENFORCED
from tests.support.helpers import TRACES, compose_config


def node(trace: str, node_id: str, host: str = "vm", ip: str = "10.0.0.1", cpus: int = 2,
         mem_MiB: float = 16384.0) -> dict:
    """A node's report as the agent makes it, its GPUs read through gpu_probe from a recorded trace."""
    gpus = []
    if trace:
        with Nvml(ReplayNvml.load(TRACES / trace)) as nv:
            gpus = inventory.collect(nv).gpus
    return {"node_id": node_id, "host": host, "ip": ip, "cpus": list(range(cpus)), "mem_MiB": mem_MiB, "gpus": gpus,
            "nvml_trace": "", "ray_gpus": 1.0 if gpus else 0.0}


def profile(name: str, *overrides: str):
    return compose_config(f"profile={name}", *overrides).profile


@pytest.fixture(scope="module")
def fleet() -> list[dict]:
    return [node("m60-8q-vgpu-guest.json", "a" * 56, "vm-a", "10.0.0.1"),
            node("m60-4q-vgpu-guest.json", "b" * 56, "vm-b", "10.0.0.2"),
            node("t4-power-not-supported.json", "c" * 56, "vm-c", "10.0.0.3"),
            node("a100-mig.json", "d" * 56, "vm-d", "10.0.0.4"),
            node("", "e" * 56, "vm-e", "10.0.0.5")]


def test_each_node_holds_only_the_profile_its_gpu_is(fleet):
    a, b, c, d, e = fleet
    assert seen(profile("m60-8q"), a) == "hypervisor: GRID M60-8Q seen in the VM"
    assert seen(profile("m60-8q"), b) == "" and seen(profile("m60-4q"), b).startswith("hypervisor: GRID M60-4Q")
    assert seen(profile("m60-8q"), c) == ""  # a passthrough T4 is not an M60 vGPU
    assert seen(profile("passthrough-1gpu"), c) == "1 x Tesla T4 passed through to the VM"
    assert seen(profile("passthrough-1gpu"), a) == ""  # a vGPU is not a whole GPU
    assert seen(profile("passthrough-2gpu"), c) == ""  # one GPU where two are asked
    assert seen(profile("a100-40-mig-3-20c"), d) == "MIG device NVIDIA A100-SXM4-40GB MIG 3g.20gb seen on the node"
    assert seen(profile("a100-40-mig-2-10c"), d) == ""  # not that size
    assert seen(profile("h100-mig-3-40c"), d) == ""  # not that GPU
    assert seen(profile("passthrough-1gpu"), d) == ""  # a GPU split into MIG devices is not whole
    assert seen(profile("passthrough-1gpu"), e) == "" and seen(profile("cpu"), e) == "no GPU asked for"
    assert [offer(n) for n in fleet] == ["GRID M60-8Q", "GRID M60-4Q", "Tesla T4 (passthrough)",
                                         "NVIDIA A100-SXM4-40GB MIG 3g.20gb", "no GPU"]


def test_too_few_nodes_of_the_profile_is_one_line_naming_what_the_cluster_has(fleet):
    with pytest.raises(PlacementError) as err:
        place_per_node(profile("m60-8q"), 2, fleet[:2])
    assert str(err.value) == ("profile m60-8q needs 2 node(s) with a GRID M60-8Q (ray.placement=per-node: one guest "
                              "per node); the cluster has 1 (vm-a), and 1 with GRID M60-4Q (vm-b)")
    with pytest.raises(PlacementError, match=r"needs 1 node\(s\) with a NVIDIA A100-10C .* the cluster has 0, and 1 "
                                             r"with GRID M60-8Q \(vm-a\), and 1 with GRID M60-4Q \(vm-b\), and 1 with "
                                             r"Tesla T4 \(passthrough\) \(vm-c\)"):
        place_per_node(profile("a100-40-10c"), 1, fleet[:3])


def test_nodes_sharing_a_hostname_are_told_apart_by_address(fleet):
    twins = [dict(fleet[0], host="vm"), dict(fleet[1], host="vm")]
    with pytest.raises(PlacementError, match=r"has 1 \(vm@10\.0\.0\.1\), and 1 with GRID M60-4Q \(vm@10\.0\.0\.2\)"):
        place_per_node(profile("m60-8q"), 2, twins)


def test_a_guest_goes_to_the_node_whose_gpu_is_its_profile_and_is_enforced(fleet):
    small = dict(fleet[1], cpus=[0], mem_MiB=4096.0, nvml_trace="/traces/m60-4q.json")
    (p,) = place_per_node(profile("m60-4q"), 1, [fleet[0], small])
    assert p.node_id == "b" * 56 and p.node == "vm-b" and p.validity == ENFORCED
    assert p.reason == "hypervisor: GRID M60-4Q seen in the VM; NVML replayed from /traces/m60-4q.json"
    assert p.resources == {"CPU": 0.0, "GPU": 1.0}  # the whole node, pinned by its id
    # a VM smaller than the profile is used as it is, and the record says so
    assert p.note == ("node has 1 vCPU(s), profile m60-4q asks 2; 4096 MiB memory, profile asks 8192: its own figures "
                      "recorded")


def test_which_guests_share_a_physical_gpu_is_as_stated_and_said_so(fleet):
    four_q = [dict(fleet[1], node_id=c * 56, host=f"vm-{c}", ip=f"10.0.1.{i}") for i, c in enumerate("pqr")]
    ps = place_per_node(profile("m60-4q"), 3, four_q, {"gpu0": ["vm-p", "10.0.1.1"], "gpu1": ["vm-r"]})
    assert [p.note for p in ps] == [
        "shares physical GPU gpu0 with g1 (vm-q) (stated in ray.gpu_groups, not seen)",
        "shares physical GPU gpu0 with g0 (vm-p) (stated in ray.gpu_groups, not seen)",
        "on physical GPU gpu1, no other guest of this run on it (stated in ray.gpu_groups, not seen)"]
    assert [p.note for p in place_per_node(profile("m60-4q"), 3, four_q)] == ["", "", ""]
    with pytest.raises(PlacementError, match=r"ray.gpu_groups: node vm-p \(10.0.1.0\) is in 2 groups \(a, b\)"):
        place_per_node(profile("m60-4q"), 1, four_q, {"a": ["vm-p"], "b": ["10.0.1.0"]})
