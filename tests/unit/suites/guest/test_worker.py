"""Tests of ``suites/guest/worker.py``."""

from __future__ import annotations

from suites.guest.worker import failure_text


def test_an_allocation_past_the_cap_is_named_as_such():
    class OutOfMemoryError(RuntimeError):
        pass

    class ResourceExhaustedError(RuntimeError):
        pass

    torch_oom = OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
    assert failure_text(torch_oom).startswith("framebuffer cap exceeded: CUDA out of memory")
    assert failure_text(ResourceExhaustedError("OOM when allocating tensor")).startswith("framebuffer cap exceeded")
    assert failure_text(ValueError("bad")) == "ValueError: bad"
