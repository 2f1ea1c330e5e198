"""Datasheet figures of the GPUs the suite meets: what a probe's measurement is held against.

Memory bandwidth (GB/s, read + write, as NVIDIA states it) and FP32 throughput
without tensor cores (TFLOP/s, FMA = 2 flops), per GPU (a Tesla M60 board holds
two), from NVIDIA's product datasheets. A GPU is found by its NVML name.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Sheet:
    name: str
    bandwidth_GBps: float
    fp32_TFLOPS: float


# First match wins: the more specific names (SXM, PCIe, memory size) before the family.
SHEETS: tuple[tuple[str, Sheet], ...] = (
    (r"H200", Sheet("H200", 4800, 67.0)),
    (r"H100.*NVL", Sheet("H100 NVL", 3900, 60.0)),
    (r"H100.*PCIe", Sheet("H100 PCIe", 2000, 51.0)),
    (r"H100", Sheet("H100 SXM5", 3350, 67.0)),
    (r"A100.*80\s*GB.*PCIe|A100.*PCIE.*80GB", Sheet("A100 80GB PCIe", 1935, 19.5)),
    (r"A100.*80\s*GB", Sheet("A100 80GB SXM4", 2039, 19.5)),
    (r"A100", Sheet("A100 40GB", 1555, 19.5)),
    (r"L40S", Sheet("L40S", 864, 91.6)),
    (r"L40\b", Sheet("L40", 864, 90.5)),
    (r"\bL4\b", Sheet("L4", 300, 30.3)),
    (r"\bA10\b", Sheet("A10", 600, 31.2)),
    (r"\bT4\b", Sheet("T4", 320, 8.1)),
    (r"M60", Sheet("Tesla M60 (one of the board's two GPUs)", 160, 4.8)),
)


def datasheet(gpu_name: str) -> Sheet | None:
    """The datasheet figures for an NVML GPU name ('NVIDIA H100 80GB HBM3'), None for a GPU not listed."""
    for pattern, sheet in SHEETS:
        if re.search(pattern, gpu_name or "", re.IGNORECASE):
            return sheet
    return None
