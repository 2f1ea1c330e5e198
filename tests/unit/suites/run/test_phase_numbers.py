"""Tests of ``suites/run/phase_numbers.py``."""

from __future__ import annotations

import math

from suites.run.mixed import PhaseNumbers
from suites.run.outcome import missed_target


def test_phase_numbers_read_a_blank_rate_and_a_missed_target_from_the_guests():
    from gpu_probe import vocab

    missed = {vocab.IMAGES_PER_SEC.key: math.nan, "target_accuracy": 0.99, "target_met": 0.0,
              "test_accuracy": 0.0859}
    n = PhaseNumbers.from_guests({"host_other_cpu_pct.mean": 30.0, "host_other_cpu_pct.worst": 200.0},
                                 [("mnist-torch", True, missed)])
    assert n.ml_rate_blank == 1 and n.ml_missed == missed_target(missed) != ""
    assert n.host_other_cpu_pct == 200.0  # what the phase said (the look before it), not the mean alone


def test_a_guests_need_is_what_its_tensors_held_not_what_a_larger_cap_let_the_allocator_cache():
    """On an H200, mnist-torch under m60-2q's cap read 1,372 MiB (NVML and the allocator's reserve) and a sizing
    refused m60-1q ("ml needs 1,372 MiB > 1,024"): what a smaller framebuffer must hold is the tensors' peak."""
    from suites.run.phase_numbers import gpu_mem_MiB

    seen = {"gpu_mem_self_MiB": 1372.0, "gpu_mem_MiB.max": 1370.0}
    assert gpu_mem_MiB(seen) == 1372.0  # a guest that did not count its tensors: the larger of what was seen
    assert gpu_mem_MiB({**seen, "gpu_mem_need_MiB": 974.0}) == 974.0
