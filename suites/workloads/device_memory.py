"""A guest's own GPU memory: its CUDA context measured after start-up (what a framebuffer cap must leave it), and
what it tells where NVML cannot attribute memory (a container's PID namespace, MPS) and where a smaller framebuffer
must be judged: what the allocator reserved, and what the tensors held at their peak."""

from __future__ import annotations

import contextlib
import math
import os
from collections.abc import Callable, Iterator
from types import ModuleType
from typing import TYPE_CHECKING, TypeVar

from gpu_probe import vocab
from gpu_probe.nvml import Nvml
from gpu_probe.shapes import Json

if TYPE_CHECKING:
    import torch

__all__ = ["client_MiB", "measure_context", "self_reported"]

T = TypeVar("T")
Lists = dict[str, dict[int, float]]  # NVML's process lists of a GPU: list name -> pid -> MiB


def self_reported(reserved_MiB: float, allocated_MiB: float, context_MiB: Json) -> dict[str, float]:
    """:data:`vocab.GUEST_GPU_MEM_SELF` (what the allocator reserved) and :data:`vocab.GUEST_GPU_MEM_NEED` (what the
    tensors held at their peak: under m60-2q's cap the allocator cached 688 MiB for mnist-torch where its tensors
    held ~290, and a sizing read the cached figure as m60-1q's need), each with the measured CUDA context; {} without
    a context figure (the whole-GPU case: none was measured)."""
    if not isinstance(context_MiB, (int, float)):
        return {}
    return {vocab.GUEST_GPU_MEM_SELF.key: round(reserved_MiB + float(context_MiB), 1),
            vocab.GUEST_GPU_MEM_NEED.key: round(allocated_MiB + float(context_MiB), 1)}


def measure_context(torch: ModuleType, device: torch.device) -> tuple[float, str]:
    """This process's device memory right after CUDA start-up, outside torch's allocator (MiB), and how it was
    read: NVML's per-process figure for this GPU; where NVML cannot attribute one to this pid (a container's own PID
    namespace, MPS), the one client that appeared in NVML's lists during this guest's turn (guests on a GPU start
    their contexts one at a time: :func:`context_turn`), so neither an MPS server started with it nor another
    guest is counted; else NVML's device-wide rise over the turn, said; else CUDA's device-wide figure, said."""
    uuid = str(torch.cuda.get_device_properties(device.index).uuid)
    with context_turn(uuid):
        before, lists = nvml_device_used_MiB(uuid), nvml_process_lists(uuid)
        torch.cuda.mem_get_info(device.index)  # starts the context
        warm_handles(torch, device)  # cuBLAS and cuDNN handles: outside the allocator, counted with the context
        torch.cuda.synchronize(device)
        reserved = torch.cuda.memory_reserved(device.index) / 2**20
        own = nvml_process_MiB(uuid)
        if own is not None:
            return max(0.0, own - reserved), "NVML per-process"
        client, which = client_MiB(lists, nvml_process_lists(uuid))
        if client is not None:
            return max(0.0, client - reserved), f"NVML: the {which} that appeared on the GPU during this guest's turn"
        after = nvml_device_used_MiB(uuid)
        if before is not None and after is not None:
            mps = " (sharing=mps: an MPS server started with it is counted too)" \
                if os.environ.get("CUDA_MPS_PIPE_DIRECTORY") else ""
            return max(0.0, after - before - reserved), f"NVML device-wide rise, measured alone on the GPU{mps}"
        free1, total = torch.cuda.mem_get_info(device.index)
    return max(0.0, (total - free1) / 2**20 - reserved), "device-wide (no NVML figure: other processes counted)"


def client_MiB(before: Lists, after: Lists) -> tuple[float | None, str]:
    """The device memory of the one process that appeared in NVML's lists between ``before`` and ``after`` (a
    guest's own turn), and what it was: an MPS client where NVML lists MPS clients (the compute list then holds the
    MPS server, which may have started with this client: never counted as it), else a compute process. None where
    not exactly one appeared with a figure (a figure NVML does not give, or two newcomers: who is who is unknown)."""
    for name, what in (("mps", "MPS client"), ("compute", "compute process")):
        if name == "compute" and after.get("mps"):
            break  # under MPS a new compute entry is the server, not this client
        new = {pid: mib for pid, mib in after.get(name, {}).items() if pid not in before.get(name, {})}
        if len(new) == 1 and not math.isnan(next(iter(new.values()))):
            return next(iter(new.values())), what
    return None, ""


def nvml_process_lists(uuid: str) -> Lists:
    """NVML's process lists of the GPU with this UUID ({} without NVML or that GPU)."""
    return on_gpu(uuid, lambda nv, i: nv.process_lists(i)) or {}


@contextlib.contextmanager
def context_turn(uuid: str) -> Iterator[None]:
    """Guests on one GPU start and measure their CUDA contexts one at a time (a host-wide lock per GPU, held about
    a second): four guests starting at once each counted the others' contexts as their own."""
    import fcntl

    # /tmp, not $TMPDIR: every process on the host that measures this GPU's context meets at this lock
    path = os.path.join("/tmp", f"gpu-mixed-bench-context-{uuid.removeprefix('GPU-')}.lock")
    with open(path, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def warm_handles(torch: ModuleType, device: torch.device) -> None:
    """The library handles a training step makes on first use (cuBLAS for a matmul, cuDNN for a convolution), made
    now: their memory sits outside torch's allocator, so a context measured before them undercounted the cap."""
    x = torch.ones(1, 1, 4, 4, device=device)
    torch.nn.functional.conv2d(x, torch.ones(1, 1, 3, 3, device=device))
    torch.ones(8, 8, device=device) @ torch.ones(8, 8, device=device)


def nvml_process_MiB(uuid: str) -> float | None:
    """NVML's device memory of this process on the GPU with this UUID, None where NVML cannot say."""
    own = on_gpu(uuid, lambda nv, i: nv.process_memory(i).get(os.getpid()))
    return None if own is None or math.isnan(own) else float(own)  # listed without a figure: cannot say


def nvml_device_used_MiB(uuid: str) -> float | None:
    """NVML's device memory in use on the GPU with this UUID (every process's), None where NVML cannot say."""
    used = on_gpu(uuid, lambda nv, i: nv.sample(i).get(vocab.GPU_MEM_USED.key))
    return float(used) if isinstance(used, (int, float)) and not math.isnan(used) else None


def on_gpu(uuid: str, read: Callable[[Nvml, int], T]) -> T | None:
    """``read(nvml, index)`` for the GPU with this UUID; None without NVML or that GPU."""
    with Nvml() as nv:
        if not nv.available:
            return None
        for i in range(nv.device_count()):
            if str(nv.device_info(i).get("uuid", "")).removeprefix("GPU-") == uuid.removeprefix("GPU-"):
                return read(nv, i)
    return None
