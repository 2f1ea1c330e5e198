"""Placement: which host CPUs and GPUs each guest gets, decided before any start.

Impossible placements fail here with the numbers that do not fit. vGPU guests
fill one GPU before the next (the hypervisors' depth-first "consolidation"
policy); passthrough guests take whole GPUs exclusively. On a host without a
GPU every guest runs on the CPU and its placement says so.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpu_probe import vocab
from gpu_probe.inventory import Inventory
from suites.errors import PlacementError
from suites.profiles import ProfileConfig, ProfileKind


@dataclass
class Placement:
    guest_id: str
    vcpus: list[int]
    gpu_indices: list[int]
    gpus: list[str]  # what the guest puts in CUDA_VISIBLE_DEVICES
    note: str = ""

    @property
    def gpu_label(self) -> str:
        return ",".join(str(i) for i in self.gpu_indices) if self.gpu_indices else vocab.NO_GPU


def place_cpus(n: int, vcpus: int, host_cpus: list[int], overcommit: bool) -> list[list[int]]:
    need = n * vcpus
    if vcpus > len(host_cpus) or (need > len(host_cpus) and not overcommit):
        raise PlacementError(
            f"{n} guest(s) x {vcpus} vCPUs = {need} vCPUs > {len(host_cpus)} host cores "
            "(lower profile.vcpus, run fewer guests, or set scenario.cpu_overcommit=true)")
    return [[host_cpus[(g * vcpus + k) % len(host_cpus)] for k in range(vcpus)] for g in range(n)]


def gpu_capacity(profile: ProfileConfig, gpu_mem_MiB: float | None) -> int:
    """Guests of this profile one GPU can hold: instance limit and framebuffer."""
    if profile.kind is not ProfileKind.vgpu:
        return 1
    if gpu_mem_MiB is None or profile.framebuffer_MiB is None:
        return profile.max_per_gpu
    return min(profile.max_per_gpu, int(gpu_mem_MiB // profile.framebuffer_MiB))


def place_gpus(profile: ProfileConfig, n: int, inv: Inventory) -> list[list[int]]:
    gpus = inv.gpus
    if profile.kind is ProfileKind.passthrough:
        need = n * profile.gpus
        if need > len(gpus):
            raise PlacementError(f"{n} guest(s) x {profile.gpus} passthrough GPU(s) = {need} GPUs "
                                 f"> {len(gpus)} on this host")
        return [list(range(g * profile.gpus, (g + 1) * profile.gpus)) for g in range(n)]
    slots = [(i, gpu_capacity(profile, g.get(vocab.GPU_MEM_TOTAL.key))) for i, g in enumerate(gpus)]
    capacity = sum(c for _, c in slots)
    if n > capacity:
        per = ", ".join(f"GPU{i}: {c}" for i, c in slots)
        raise PlacementError(f"{n} guest(s) of {profile.name} ({profile.framebuffer_MiB} MiB, "
                             f"max {profile.max_per_gpu}/GPU) > capacity {capacity} on this host ({per})")
    order = [i for i, c in slots for _ in range(c)]  # depth-first: fill GPU0, then GPU1...
    return [[order[g]] for g in range(n)]


def place(profile: ProfileConfig, n: int, inv: Inventory, host_cpus: list[int], *,
          cpu_overcommit: bool = False, host_mem_MiB: float | None = None) -> list[Placement]:
    """Place ``n`` guests of ``profile`` on this host, or raise PlacementError."""
    cpus = place_cpus(n, profile.vcpus, host_cpus, cpu_overcommit)
    mem = host_mem_MiB if host_mem_MiB is not None else inv.mem_total_MiB
    if n * profile.memory_MiB > mem:
        raise PlacementError(f"{n} guest(s) x {profile.memory_MiB} MiB = {n * profile.memory_MiB} MiB "
                             f"> {mem:.0f} MiB host memory (lower profile.memory_MiB)")
    ids = [f"g{i}" for i in range(n)]
    if profile.kind is ProfileKind.cpu:
        return [Placement(ids[i], cpus[i], [], []) for i in range(n)]
    if not inv.has_gpu:
        note = f"{vocab.NO_GPU}: profile {profile.name} not enforced, guest runs on the CPU"
        return [Placement(ids[i], cpus[i], [], [], note) for i in range(n)]
    gpu_sets = place_gpus(profile, n, inv)
    placements = []
    for i in range(n):
        visible = [inv.gpus[j].get("uuid") or str(j) for j in gpu_sets[i]]
        placements.append(Placement(ids[i], cpus[i], gpu_sets[i], visible))
    return placements
