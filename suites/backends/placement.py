"""Placement: which host CPUs and GPUs each guest gets, decided before any start.

Impossible placements fail here with the numbers that do not fit. vGPU guests
fill one GPU before the next (the hypervisors' depth-first "consolidation"
policy); passthrough guests take whole GPUs exclusively. A vGPU profile on a
host GPU that is not its native model runs *emulated*: capacity is host
framebuffer / profile framebuffer, and each placement says so. On a host without a
GPU every guest runs on the CPU and its placement says so.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from gpu_probe import vocab
from gpu_probe.inventory import Inventory
from suites.backends.mps import daemon_running, share_pct
from suites.backends.mps import guest_env as mps_guest_env
from suites.config.profiles import GpuAccess, ProfileConfig, family
from suites.errors import PlacementError
from suites.validity import EMULATED, EMULATED_MPS, ENFORCED, NOT_ENFORCED


@dataclass
class Placement:
    guest_id: str
    vcpus: list[int]
    gpu_indices: list[int]
    gpus: list[str]  # what the guest puts in CUDA_VISIBLE_DEVICES
    note: str = ""
    env: dict[str, str] = field(default_factory=dict)  # e.g. CUDA MPS limits
    resources: dict[str, float] = field(default_factory=dict)  # what a Ray actor asks for (backend=ray)
    node: str = ""  # the Ray node that ran it; "" for this host
    node_id: str = ""  # the Ray node it must run on (ray.placement=per-node); "" where Ray picks
    validity: str = ENFORCED  # ENFORCED | EMULATED | NOT_ENFORCED, as placed
    reason: str = ""  # why the validity is what it is, where that is not the usual reason (TCG_EMULATION)

    @property
    def gpu_label(self) -> str:
        return ",".join(str(i) for i in self.gpu_indices) if self.gpu_indices else vocab.NO_GPU


def mps_pipe_dir() -> Path:
    """Where another MPS control daemon would have its pipes (CUDA's own variable, else its default)."""
    return Path(os.environ.get("CUDA_MPS_PIPE_DIRECTORY", "/tmp/nvidia-mps"))


def sharing_of(profile: ProfileConfig, n_gpus: int, mps: bool, pipe_dir: Path) -> tuple[dict[str, str], str]:
    """(a guest's MPS environment, the note its placement carries) for ``sharing=mps`` (``mps``) or time-slicing.

    Under time-slicing a daemon someone else runs would still take the guests' CUDA contexts: said, never
    silent. The run's own daemon is started by the runner (suites/backends/mps.py), not here.
    """
    if mps:
        env = mps_guest_env(profile, n_gpus)
        cap = f", device memory {profile.framebuffer_MiB} MiB" if profile.framebuffer_MiB else ""
        return env, f"MPS-enforced: {share_pct(profile)}% of SMs{cap} (the run's own MPS daemon)"
    notes = []
    if profile.mps_share_pct is not None:
        notes.append(f"profile.mps_share_pct={profile.mps_share_pct} not applied: sharing=timeslice "
                     "(sharing=mps starts the run's own MPS daemon)")
    if daemon_running(pipe_dir):
        notes.append(f"an MPS daemon not started by this run answers at {pipe_dir}: guests' CUDA contexts go "
                     "through it")
    return {}, "; ".join(notes)


def place_cpus(n: int, vcpus: int, host_cpus: list[int], overcommit: bool) -> list[list[int]]:
    need = n * vcpus
    if vcpus > len(host_cpus) or (need > len(host_cpus) and not overcommit):
        exc = PlacementError(
            f"{n} guest(s) x {vcpus} vCPUs = {need} vCPUs > {len(host_cpus)} host cores "
            "(lower profile.vcpus, run fewer guests, or set scenario.cpu_overcommit=true)")
        exc.vcpus_wanted = vcpus if overcommit else need  # type: ignore[attr-defined]  # what a free core count must reach
        raise exc
    return [[host_cpus[(g * vcpus + k) % len(host_cpus)] for k in range(vcpus)] for g in range(n)]


@dataclass(frozen=True)
class GpuSlots:
    """How many guests of a profile one host GPU holds, and whether that is emulated."""

    index: int
    capacity: int
    emulated_on: str | None = None  # the host GPU's name when it is not the profile's native model


def gpu_capacity(profile: ProfileConfig, gpu: dict, index: int = 0) -> GpuSlots:
    """The vendor's instance limit on the native GPU; host framebuffer / profile framebuffer elsewhere.

    On the native model the table is authoritative: NVML reports a little less
    than the nominal framebuffer (an M60 shows 8129 MiB), which must not turn
    one M60-8Q into zero.
    """
    if profile.gpu_access is not GpuAccess.vgpu:
        return GpuSlots(index, 1)
    mem, fb, name = gpu.get(vocab.GPU_MEM_TOTAL.key), profile.framebuffer_MiB, gpu.get("name") or "?"
    if not isinstance(mem, (int, float)) or fb is None:
        return GpuSlots(index, profile.max_per_gpu)
    if profile.gpu_model and family(profile.gpu_model) != family(name):
        return GpuSlots(index, int(mem // fb), name)
    return GpuSlots(index, profile.max_per_gpu)


def place_gpus(profile: ProfileConfig, n: int, inv: Inventory) -> tuple[list[list[int]], list[GpuSlots]]:
    gpus = inv.gpus
    if profile.gpu_access is GpuAccess.passthrough:
        need = n * profile.gpus
        if need > len(gpus):
            raise PlacementError(f"{n} guest(s) x {profile.gpus} passthrough GPU(s) = {need} GPUs "
                                 f"> {len(gpus)} on this host")
        return [list(range(g * profile.gpus, (g + 1) * profile.gpus)) for g in range(n)], []
    slots = [gpu_capacity(profile, g, i) for i, g in enumerate(gpus)]
    capacity = sum(s.capacity for s in slots)
    if n > capacity:
        per = ", ".join(f"GPU{s.index} {gpus[s.index].get(vocab.GPU_MEM_TOTAL.key, '?')} MiB: {s.capacity}"
                        + (" emulated" if s.emulated_on else "") for s in slots)
        raise PlacementError(f"{n} guest(s) of {profile.name} ({profile.framebuffer_MiB} MiB, "
                             f"max {profile.max_per_gpu}/GPU) > capacity {capacity} on this host ({per})")
    order = [s.index for s in slots for _ in range(s.capacity)]  # depth-first: fill GPU0, then GPU1...
    return [[order[g]] for g in range(n)], slots


def mig_enabled(gpu: dict) -> bool:
    return gpu.get("mig_mode") == "enabled"


def visible_devices(profile: ProfileConfig, inv: Inventory, gpu_sets: list[list[int]]) -> list[list[str]]:
    """Each guest's ``CUDA_VISIBLE_DEVICES`` entries: GPU UUIDs (indices only where NVML gave none), and on a GPU
    with MIG enabled, where CUDA sees only MIG devices, a MIG device of the profile's slice count per guest,
    exclusively. MIG mode and MIG devices are read, never made: what is missing is one PlacementError."""
    taken: set[str] = set()
    out = []
    for gpus in gpu_sets:
        visible = []
        for j in gpus:
            gpu = inv.gpus[j]
            if not mig_enabled(gpu):
                visible.append(gpu.get("uuid") or str(j))
                continue
            if profile.scheduler != "mig":
                raise PlacementError(f"GPU{j} has MIG enabled: CUDA sees only its MIG devices, so only a MIG-backed "
                                     f"profile can use it, not {profile.name} (this suite never changes MIG mode)")
            want = f"{profile.mig_slices}g."
            free = [m for m in gpu.get("mig_devices") or [] if want in str(m.get("name")) and m.get("uuid")
                    and m["uuid"] not in taken]
            if not free:
                have = ", ".join(str(m.get("name")) for m in gpu.get("mig_devices") or []) or "none"
                raise PlacementError(f"{profile.name} needs a free {want[:-1]} MIG device per guest on GPU{j}; "
                                     f"it has {have} (create them with nvidia-smi mig; this suite never does)")
            taken.add(free[0]["uuid"])
            visible.append(free[0]["uuid"])
        out.append(visible)
    return out


def check_memory(profile: ProfileConfig, n: int, host_MiB: float, what: str = "guest(s)",
                 overhead_MiB: int = 0, overhead: str = "") -> None:
    """``n`` guests' memory, each with ``overhead_MiB`` of host memory that is not the guest's (``overhead`` says
    what: a TCG VM's translation cache), fits in the host's."""
    each = profile.memory_MiB + overhead_MiB
    if n * each > host_MiB:
        per = f"({profile.memory_MiB} MiB + {overhead_MiB} MiB {overhead})" if overhead_MiB else f"{each} MiB"
        raise PlacementError(f"{n} {what} x {per} = {n * each} MiB > {host_MiB:.0f} MiB host memory "
                             "(lower profile.memory_MiB)")


def no_gpu_note(profile: ProfileConfig) -> str:
    return f"{vocab.NO_GPU}: profile {profile.name} not enforced, guest runs on the CPU"


def place_on_host(profile: ProfileConfig, n: int, inv: Inventory, host_cpus: list[int], *,
                  cpu_overcommit: bool = False, host_mem_MiB: float | None = None,
                  mps: bool = False) -> list[Placement]:
    """Place ``n`` guests of ``profile`` on this host, or raise PlacementError."""
    cpus = place_cpus(n, profile.vcpus, host_cpus, cpu_overcommit)
    check_memory(profile, n, host_mem_MiB if host_mem_MiB is not None else inv.mem_total_MiB)
    ids = [f"g{i}" for i in range(n)]
    if profile.gpu_access is GpuAccess.cpu:
        return [Placement(ids[i], cpus[i], [], []) for i in range(n)]
    if not inv.has_gpu:
        return [Placement(ids[i], cpus[i], [], [], no_gpu_note(profile), validity=NOT_ENFORCED) for i in range(n)]
    gpu_sets, slots = place_gpus(profile, n, inv)
    visible_sets = visible_devices(profile, inv, gpu_sets)
    placements = []
    for i in range(n):
        env, mps_note = sharing_of(profile, len(gpu_sets[i]), mps, mps_pipe_dir())
        visible = visible_sets[i]
        emulated = [s for s in slots if s.index in gpu_sets[i] and s.emulated_on]
        note = (f"{profile.name} emulated on {emulated[0].emulated_on}: {emulated[0].capacity} per GPU = host "
                f"framebuffer / {profile.framebuffer_MiB} MiB" if emulated else "")
        no_mig = profile.scheduler == "mig" and not emulated and any(
            inv.gpus[j].get("mig_mode") != "enabled" for j in gpu_sets[i])
        if no_mig:
            note = f"{profile.name} emulated: MIG is not enabled on this GPU, so its slice is time-shared"
        note = "; ".join(x for x in (note, mps_note) if x)
        validity = EMULATED if emulated or no_mig else ENFORCED
        if mps and validity == EMULATED:
            validity = EMULATED_MPS
        placements.append(Placement(ids[i], cpus[i], gpu_sets[i], visible, note, env, validity=validity))
    return placements
