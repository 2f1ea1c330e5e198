"""Tests of ``suites/config/profile_files.py``: the profiles shipped under configs/profile, read as files."""

from __future__ import annotations

import pytest

from suites.config.profile_files import candidate_profiles, load_profile
from suites.config.schema import CONFIG_DIR


@pytest.mark.heavy
def test_a_gpus_candidates_are_its_vgpu_profiles_largest_first_or_those_named():
    names = [p.name for p in candidate_profiles("Tesla M60", [])]
    assert names[0] == "m60-8q" and {"m60-4q", "m60-2q", "m60-1q"} <= set(names)
    assert [p.name for p in candidate_profiles("GRID M60-4Q", [])] == names  # a vGPU's name: its GPU's family
    assert [p.name for p in candidate_profiles("Tesla M60", ["m60-2q"])] == ["m60-2q"]
    assert candidate_profiles("Voodoo2", []) == []


def test_a_profile_file_reads_as_its_config():
    m60 = load_profile(CONFIG_DIR / "profile" / "m60-2q.yaml")
    assert m60.name == "m60-2q" and m60.framebuffer_MiB == 2048
