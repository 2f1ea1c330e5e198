"""Tests of ``suites/guest/protocol.py``."""

from __future__ import annotations

import json

import pytest

from suites.guest.protocol import GuestSpec, parse_event
from suites.guest.setup import apply_resources
from suites.guest.worker import failure_text
from tests.support.guest_specs import spec


def test_an_allocation_past_the_cap_names_the_cap_and_not_torchs_allocator_advice():
    """c2 on an H200: torch's text says 139 GiB of the GPU is free and suggests expandable_segments."""
    from suites.guest.protocol import GuestSpec

    class OutOfMemoryError(RuntimeError):
        pass

    oom = OutOfMemoryError(
        "CUDA out of memory. Tried to allocate 264.00 MiB. GPU 0 has a total capacity of 139.80 GiB of which 139.00 "
        "GiB is free. Including non-PyTorch memory, this process has 808.00 MiB memory in use. 340.00 MiB allowed; Of "
        "the allocated memory 84.41 MiB is allocated by PyTorch, and 39.59 MiB is reserved by PyTorch but "
        "unallocated. If reserved but unallocated memory is large try setting "
        "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation for Memory "
        "Management  (https://docs.pytorch.org/docs/stable/notes/cuda.html#optimizing-memory-usage-with-pytorch-cuda-"
        "alloc-conf)")
    spec = GuestSpec("g0", "m60-1q", "memory-fill", {}, {}, [0], ["GPU-1"], 1024, 4096)
    text = failure_text(oom, spec)
    assert text.startswith("framebuffer cap exceeded (m60-1q: 1024 MiB, CUDA context included): CUDA out of memory.")
    assert text.endswith("39.59 MiB is reserved by PyTorch but unallocated.") and "expandable_segments" not in text
    whole = GuestSpec("g0", "passthrough-1gpu", "memory-fill", {}, {}, [0], ["GPU-1"], None, 4096)
    assert failure_text(oom, whole).startswith("framebuffer cap exceeded: CUDA out of memory.")  # no cap to name


def test_spec_round_trips_and_rejects_other_versions():
    s = spec(vcpus=[0, 1], gpus=["GPU-1"])
    assert GuestSpec.from_line(s.to_line()) == s
    raw = json.loads(s.to_line())
    raw["protocol"] = 99
    with pytest.raises(ValueError, match="protocol 99"):
        GuestSpec.from_line(json.dumps(raw))


def test_non_protocol_lines_are_ignored():
    assert parse_event("Warning: something from a library") is None
    assert parse_event('{"no_event": 1}') is None
    assert parse_event('{"event": "ready"}') == {"event": "ready"}


def test_guest_applies_the_placement_environment(monkeypatch):
    import os

    monkeypatch.setattr(os, "environ", dict(os.environ))
    spec = GuestSpec("g0", "h100-20c", "mnist-torch", {}, {}, [], ["GPU-0"], 20480, 1024,
                     env={"CUDA_MPS_ACTIVE_THREAD_PERCENTAGE": "25"})
    apply_resources(GuestSpec.from_line(spec.to_line()))
    assert os.environ["CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"] == "25" and os.environ["CUDA_VISIBLE_DEVICES"] == "GPU-0"
