"""Tests of ``suites/backends/ray/cluster.py``."""

from __future__ import annotations

from pathlib import Path

import pytest

from suites.backends.handle import GuestHandle
from suites.backends.placement import Placement
from suites.backends.ray import cluster as ray_backend
from suites.guest.protocol import GuestSpec


@pytest.mark.parametrize(("address", "expected"), [
    ("10.0.0.5:6379", ("10.0.0.5", 6379)), ("ray://head.example:10001", ("head.example", 10001)),
    ("auto", (None, 0)), ("[::1]:6379", ("::1", 6379))])
def test_ray_address_forms(address, expected):
    assert ray_backend.gcs_endpoint(address) == expected


def test_node_running_other_code_is_named_in_the_placement():
    spec = GuestSpec("g0", "m60-4q", "mnist-torch", {}, {}, [], [], 4096, 2048)
    p = Placement("g0", [], [], [], resources={"CPU": 1.0, "GPU": 0.5})
    info = {"host": "node7", "ip": "10.0.0.7", "gpus": ["3"], "suite_sha": "0123abc", "node_id": "5e1f" * 14}
    ray_backend.assign(GuestHandle(spec, Path("/dev/null")), p, info, [4], "4567def")
    assert (spec.vcpus, spec.gpus, p.gpu_indices) == ([4], ["3"], [3])
    assert p.note == "Ray node node7 (10.0.0.7) node 5e1f5e1f: 0.5 of GPU 3; suite 0123abc there, 4567def here"
