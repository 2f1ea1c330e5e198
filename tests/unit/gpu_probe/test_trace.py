"""Tests of ``gpu_probe/trace.py``."""

from __future__ import annotations

import json
import math
from pathlib import Path

from gpu_probe import inventory
from gpu_probe.nvml import Nvml
from gpu_probe.sampler import Sampler
from gpu_probe.trace import TRACE_ENV, RecordingNvml, ReplayNvml, lib_from_env
from tests.support.driver_samples import trace
from tests.support.traces import TRACES, sample


def test_the_node_trace_comes_from_its_environment_only_where_set(tmp_path: Path):
    assert lib_from_env({}) == (None, "")
    trace = str(TRACES / "m60-8q-vgpu-guest.json")
    lib, path = lib_from_env({TRACE_ENV: trace})
    assert path == trace and isinstance(lib, ReplayNvml)


def test_field_not_supported():
    s = sample("t4-power-not-supported")
    agg = s.aggregate("gpu0.")
    assert agg["util_pct.mean"] == 42 and agg["temp_C.max"] == 47
    assert not any(k.startswith("power_W") for k in agg), "an unsupported field is absent, not zero"
    assert all(math.isnan(r["gpu0.power_W"]) for r in s.rows)


def test_recording_a_replay_reproduces_it(tmp_path: Path):
    """The recorder's output replays to the same inventory: the format round-trips."""
    rec = RecordingNvml(ReplayNvml.load(TRACES / "m60-vgpu-host.json"), description="round trip")
    nv = Nvml(rec).open()
    first = inventory.collect(nv)
    s = Sampler(10, nvml=nv).prepare()
    rec.new_frame()
    s.collect()
    path = tmp_path / "again.json"
    path.write_text(json.dumps(rec.to_dict()))
    with Nvml(ReplayNvml.load(path)) as nv2:
        again = inventory.collect(nv2)
    assert again.gpus == first.gpus
    assert rec.frames and "nvmlDeviceGetUtilizationRates(gpu0)" in json.dumps(rec.to_dict())


def test_nvml_hands_each_driver_sample_once_in_epoch_seconds():
    got = [{"timeStamp": 1_795_697_537_166_667, "sampleValue": {"uiVal": 97}},
           {"timeStamp": 1_795_697_537_000_000, "sampleValue": {"uiVal": 3}}]
    with Nvml(ReplayNvml(trace(got))) as nv:
        first, again = nv.util_samples(0), nv.util_samples(0)  # a replay answers the same; the wrapper dedupes
    assert first == [(1_795_697_537.0, 3.0), (1_795_697_537.166667, 97.0)] and again == []
    with Nvml(ReplayNvml({**trace([]), "static": {"nvmlDeviceGetCount()": 1,
                                                  "nvmlDeviceGetHandleByIndex(0)": "gpu0"}})) as nv:
        assert nv.util_samples(0) == []  # a driver without them: NOT_SUPPORTED, nothing invented
