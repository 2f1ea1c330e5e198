"""A host inventory as gpu_probe reports one, with the GPUs a placement test needs."""

from __future__ import annotations

from gpu_probe.inventory import Inventory


def host(gpus: int = 0, gpu_mem_MiB: float = 8192.0) -> Inventory:
    devices = [{"index": i, "name": "Tesla M60", "uuid": f"GPU-{i}", "mem_total_MiB": gpu_mem_MiB}
               for i in range(gpus)]
    return Inventory("h", "Linux", "3.11", "cpu", 8, 8, 8, 65536.0, gpus=devices)


def gpu_host(name: str, mem_MiB: float) -> Inventory:
    """A GPU host as gpu_probe reports one: 16 cores, 128 GiB, one GPU of that NVML name and memory."""
    return Inventory("gpu-host", "Linux", "3.12", "cpu", 16, 16, 16, 131072.0,
                     gpus=[{"index": 0, "name": name, "uuid": "GPU-0", "mem_total_MiB": mem_MiB}])
