"""Tests of ``suites/workloads/device_memory.py``: a guest's own count of its GPU memory."""

from __future__ import annotations

from suites.workloads.device_memory import self_reported


def test_a_guest_reports_what_its_allocator_reserved_and_what_its_tensors_needed_with_the_context():
    assert self_reported(1400.0, 300.0, 600.0) == {"gpu_mem_self_MiB": 2000.0, "gpu_mem_need_MiB": 900.0}
    assert self_reported(1400.0, 300.0, None) == {}  # the whole GPU: no context measured, no figure
