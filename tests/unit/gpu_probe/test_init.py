"""Tests of ``gpu_probe/__init__.py``."""

from __future__ import annotations

import gpu_probe


def test_gpu_probe_names_its_public_surface():
    assert len(gpu_probe.__all__) == len(set(gpu_probe.__all__))
    for name in gpu_probe.__all__:
        assert getattr(gpu_probe, name) is not None, name
    assert {"Nvml", "NA", "Inventory", "Sampler", "SampleSet", "summarize", "ratio_interval", "datasheet"} <= set(
        gpu_probe.__all__)
