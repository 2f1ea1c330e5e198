"""Recorded NVML traces (tests/traces) replayed through gpu_probe: an Nvml over one, and a short sample of it."""

from __future__ import annotations

import time

from gpu_probe.nvml import Nvml
from gpu_probe.sampler import Sampler
from gpu_probe.trace import ReplayNvml
from tests.support.helpers import TRACES


def replay(name: str) -> Nvml:
    return Nvml(ReplayNvml.load(TRACES / f"{name}.json"))


def sample(name: str, seconds: float = 0.3, rate_hz: float = 50) -> Sampler:
    with Sampler(rate_hz, nvml=replay(name)) as s:
        time.sleep(seconds)
    return s
