"""Datasheet figures of the GPUs the suite meets: the one GPU table. A probe's measurement is held against it, and
a profile's framebuffer against its GPU's memory (suites/config/profiles.py).

Memory (MiB), memory bandwidth (GB/s, read + write, as NVIDIA states it) and
FP32 throughput without tensor cores (TFLOP/s, FMA = 2 flops), per GPU (a Tesla
M60 board holds two), from NVIDIA's product datasheets; None where this table
does not hold the figure. A GPU is found by its NVML name.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["LARGEST_MiB", "Sheet", "datasheet", "memory_MiB"]


@dataclass(frozen=True)
class Sheet:
    name: str
    memory_MiB: int
    bandwidth_GBps: float | None
    fp32_TFLOPS: float | None


# First match wins: the more specific names (SXM, PCIe, memory size) before the family.
SHEETS: tuple[tuple[str, Sheet], ...] = (
    (r"B200", Sheet("B200", 192 * 1024, None, None)),
    (r"H200", Sheet("H200", 141 * 1024, 4800, 67.0)),
    (r"H100.*NVL", Sheet("H100 NVL", 94 * 1024, 3900, 60.0)),
    (r"H100.*PCIe", Sheet("H100 PCIe", 80 * 1024, 2000, 51.0)),
    (r"H100", Sheet("H100 SXM5", 80 * 1024, 3350, 67.0)),
    (r"A100.*80\s*GB.*PCIe|A100.*PCIE.*80GB", Sheet("A100 80GB PCIe", 80 * 1024, 1935, 19.5)),
    (r"A100.*80\s*GB", Sheet("A100 80GB SXM4", 80 * 1024, 2039, 19.5)),
    (r"A100", Sheet("A100 40GB", 40 * 1024, 1555, 19.5)),
    (r"L40S", Sheet("L40S", 48 * 1024, 864, 91.6)),
    (r"L40\b", Sheet("L40", 48 * 1024, 864, 90.5)),
    (r"\bL4\b", Sheet("L4", 24 * 1024, 300, 30.3)),
    (r"\bA10\b", Sheet("A10", 24 * 1024, 600, 31.2)),
    (r"\bT4\b", Sheet("T4", 16 * 1024, 320, 8.1)),
    (r"M60", Sheet("Tesla M60 (one of the board's two GPUs)", 8 * 1024, 160, 4.8)),
)
LARGEST_MiB = max(sheet.memory_MiB for _, sheet in SHEETS)
SIZE = re.compile(r"(\d+)\s*GB", re.IGNORECASE)


def datasheet(gpu_name: str) -> Sheet | None:
    """The datasheet figures for an NVML GPU name ('NVIDIA H100 80GB HBM3'), None for a GPU not listed."""
    for pattern, sheet in SHEETS:
        if re.search(pattern, gpu_name or "", re.IGNORECASE):
            return sheet
    return None


def memory_MiB(gpu_name: str | None) -> int | None:
    """A GPU's memory from its name: the name's "<N>GB" ('NVIDIA A100-PCIE-40GB'), else its datasheet's, else
    None."""
    sized = SIZE.search(gpu_name or "")
    if sized:
        return int(sized.group(1)) * 1024
    sheet = datasheet(gpu_name or "")
    return sheet.memory_MiB if sheet else None
