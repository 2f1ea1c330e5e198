"""What a guest process gets from the host, applied before its workload touches a framework.

The environment (thread counts, visible GPUs, CUDA MPS limits) is handed to the
guest when it is started (:func:`environment`, used by the runner's process
start), so libraries that read it once at import see the guest's share; the
guest then pins its own CPU affinity (:func:`apply_resources`).
"""

from __future__ import annotations

import ctypes
import os
import signal
from typing import Any

from suites.guest.protocol import GuestSpec
from suites.workloads import workload_class
from suites.workloads.base import GuestContext

THREAD_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS",
               "TF_NUM_INTRAOP_THREADS", "TF_NUM_INTEROP_THREADS")


def environment(spec: GuestSpec) -> dict[str, str]:
    """The guest's environment variables: its threads, its GPUs, and the placement's extras."""
    threads = str(max(1, len(spec.vcpus)))
    env = dict.fromkeys(THREAD_VARS, threads)
    # llvmpipe starts one rasteriser thread per host core unless told; a guest renders on its own vCPUs.
    env["LP_NUM_THREADS"] = threads
    # PCI order makes CUDA's numbering match NVML's when indices (not UUIDs) are given.
    env["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID"
    env["CUDA_VISIBLE_DEVICES"] = ",".join(spec.gpus)  # "" hides every GPU
    env.update(spec.env)  # placement's extras (CUDA MPS share), decided runner-side
    return env


MPS_SEEN = {"CUDA_MPS_ACTIVE_THREAD_PERCENTAGE": "mps_active_thread_pct",
            "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT": "mps_pinned_mem_limit"}


def sharing_seen() -> dict[str, str]:
    """The MPS limits this guest process runs under, as it sees them (recorded with its result: evidence, not the
    runner's intention)."""
    return {key: os.environ[var] for var, key in MPS_SEEN.items() if os.environ.get(var)}


def apply_resources(spec: GuestSpec) -> None:
    """Pin this process to the guest's vCPUs and make its environment the guest's."""
    if spec.vcpus and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, spec.vcpus)
    os.environ.update(environment(spec))


def die_with_parent() -> None:
    """Linux: get SIGKILL when the runner dies, so no guest is ever orphaned."""
    parent = os.getppid()
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:  # the parent died before prctl took effect
        os._exit(1)


def make_workload(spec: GuestSpec, rank: int = 0, world: int = 1) -> tuple[Any, Any]:
    """The spec's workload plugin and its config, for this rank."""
    plugin = workload_class(spec.workload)
    cfg = plugin.config_cls(**spec.workload_config)
    ctx = GuestContext(guest_id=spec.guest_id, vcpus=spec.vcpus, gpus=spec.gpus, framebuffer_MiB=spec.framebuffer_MiB,
                       data=spec.data, seed=spec.seed, rank=rank, world_size=world)
    return plugin(cfg, ctx), cfg
