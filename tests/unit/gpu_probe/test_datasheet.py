"""Tests of ``gpu_probe/datasheet.py``."""

from __future__ import annotations

import pytest

from gpu_probe.datasheet import LARGEST_MiB, datasheet, memory_MiB
from suites.errors import ConfigError
from tests.support.helpers import compose_config


def test_profiles_check_their_framebuffer_against_the_datasheet():
    assert memory_MiB("NVIDIA H200") == 141 * 1024 and memory_MiB("NVIDIA A100-PCIE-40GB") == 40 * 1024
    assert memory_MiB("Tesla M60") == datasheet("Tesla M60").memory_MiB == 8192 and memory_MiB("Quadro X") is None
    with pytest.raises(ConfigError, match="16384 MiB is more than the Tesla M60's 8192 MiB"):
        compose_config("profile=m60-8q", "profile.framebuffer_MiB=16384")
    with pytest.raises(ConfigError, match=f"more than the largest known GPU's {LARGEST_MiB} MiB"):
        compose_config("profile=m60-8q", "profile.gpu_model=Quadro X", f"profile.framebuffer_MiB={LARGEST_MiB + 1}")
