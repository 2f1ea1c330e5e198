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
