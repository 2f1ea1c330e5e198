"""A guest spec as the runner sends one (suites/guest/protocol.py)."""

from __future__ import annotations

from suites.guest.protocol import GuestSpec


def spec(**kw) -> GuestSpec:
    base = dict(guest_id="g0", profile="cpu", workload="mnist-torch", workload_config={}, data={},
                vcpus=[0], gpus=[], framebuffer_MiB=None, memory_MiB=1024)
    return GuestSpec(**{**base, **kw})
