"""Tests of ``suites/validity.py``: the validity words, the weakest of several, a validity with its reason."""

from __future__ import annotations

from suites.validity import (
    EMULATED,
    EMULATED_MPS,
    ENFORCED,
    NOT_ENFORCED,
    TCG_EMULATION,
    first_reason,
    is_emulated,
    is_not_enforced,
    labelled,
    weakest,
)


def test_a_run_is_worth_its_weakest_measurement_and_nothing_measured_is_not_enforced():
    assert weakest([ENFORCED, EMULATED_MPS, EMULATED]) == EMULATED
    assert weakest([ENFORCED, EMULATED_MPS]) == EMULATED_MPS
    assert weakest([EMULATED, NOT_ENFORCED, ENFORCED]) == NOT_ENFORCED
    assert weakest([ENFORCED]) == ENFORCED and weakest([]) == NOT_ENFORCED


def test_a_reason_is_said_beside_its_validity_and_the_first_one_given_is_the_runs():
    assert labelled(NOT_ENFORCED, TCG_EMULATION) == "not enforced (TCG emulation: not a performance measurement)"
    assert labelled(ENFORCED, "") == "enforced"
    assert first_reason(["", "host busy", "other"]) == "host busy" and first_reason(["", ""]) == ""


def test_a_labelled_validity_is_still_read_as_its_kind():
    assert is_emulated(EMULATED_MPS) and is_emulated("emulated (host busy)") and not is_emulated(ENFORCED)
    assert is_not_enforced("not enforced (host busy)") and not is_not_enforced(ENFORCED)
