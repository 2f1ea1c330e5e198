"""Tests of ``gpu_probe/inventory.py``."""

from __future__ import annotations

import math

import pytest

from gpu_probe import inventory
from gpu_probe.nvml import NA, Nvml
from tests.support.traces import replay, sample


def test_no_gpu_here_is_explicit_not_a_crash():
    nv = Nvml().open()
    if nv.available:
        pytest.skip("this machine has a working NVML")
    assert "no GPU" in nv.reason
    assert nv.device_count() == 0 and nv.query(lambda lib: lib.nvmlDeviceGetCount()) is NA
    inv = inventory.collect()
    assert inv.gpus == [] and inv.gpu_status.startswith("no GPU")
    assert inv.as_params()["host.gpu_names"] == "no GPU"


def test_no_gpu_host():
    nv = replay("no-gpu").open()
    assert not nv.available and nv.reason.startswith("no GPU")
    inv = inventory.collect(nv)
    assert inv.gpus == [] and inv.gpu_status.startswith("no GPU")
    s = sample("no-gpu")
    assert s.gpu_status.startswith("no GPU") and not any(c.startswith("gpu") for c in s.columns())


@pytest.mark.heavy
def test_gpu_lost_mid_run():
    with replay("h100-gpu-lost") as nv:
        inv = inventory.collect(nv)
    assert inv.gpus[0]["name"] == "NVIDIA H100 80GB HBM3" and inv.cuda_driver_version == "13.0"
    s = sample("h100-gpu-lost", seconds=0.6)
    util = [r["gpu0.util_pct"] for r in s.rows]
    assert util[0] == 97 and math.isnan(util[-1]), "readings before the loss, missing after"
    assert s.errors == 0 and s.aggregate("gpu0.")["power_W.max"] == pytest.approx(612.34)
    assert s.clock_events_seen() == {"gpu0": ["sw_power_cap"]}
