"""What a guest tells of its own GPU memory where NVML cannot attribute it (a container's PID namespace) and where a
smaller framebuffer must be judged: what the allocator reserved, and what the tensors held at their peak."""

from __future__ import annotations

from gpu_probe import vocab
from gpu_probe.shapes import Json

__all__ = ["self_reported"]


def self_reported(reserved_MiB: float, allocated_MiB: float, context_MiB: Json) -> dict[str, float]:
    """:data:`vocab.GUEST_GPU_MEM_SELF` (what the allocator reserved) and :data:`vocab.GUEST_GPU_MEM_NEED` (what the
    tensors held at their peak: under m60-2q's cap the allocator cached 688 MiB for mnist-torch where its tensors
    held ~290, and a sizing read the cached figure as m60-1q's need), each with the measured CUDA context; {} without
    a context figure (the whole-GPU case: none was measured)."""
    if not isinstance(context_MiB, (int, float)):
        return {}
    return {vocab.GUEST_GPU_MEM_SELF.key: round(reserved_MiB + float(context_MiB), 1),
            vocab.GUEST_GPU_MEM_NEED.key: round(allocated_MiB + float(context_MiB), 1)}
