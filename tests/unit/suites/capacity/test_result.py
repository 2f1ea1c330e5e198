"""Tests of ``suites/capacity/result.py``: the title that says what a sizing is worth."""

from __future__ import annotations

from suites.capacity.result import SizingResult, title_label
from suites.capacity.solver import Answer, Mix
from suites.validity import EMULATED, ENFORCED, NOT_ENFORCED


def result(validity: str, **provenance: str) -> SizingResult:
    return SizingResult(Mix(4, 1), "Tesla M60", {}, {}, Answer(None, [], []), {"m60-2q": validity},
                        {"GPU": "NVIDIA H100", **provenance})


def test_each_validity_titles_the_sizing_as_the_comparison_figures_do():
    assert title_label(result(NOT_ENFORCED)).startswith("not a GPU sizing: profiles emulated on the CPU")
    assert title_label(result(EMULATED)) == "profiles emulated on NVIDIA H100 (emulated), not their own GPU"
    assert title_label(result(ENFORCED)) == "measured on the profiles' own GPU (enforced)"


def test_a_fleet_sizing_says_where_its_guests_ran_and_a_replayed_nvml():
    assert title_label(result(NOT_ENFORCED, fleet="2 node(s)", NVML="replayed")) == (
        "not a GPU sizing: the fleet's guests ran on their nodes' CPUs (their NVML replayed from recordings); "
        "profiles not enforced")
    assert title_label(result(ENFORCED, fleet="2 node(s)")).startswith("measured on the fleet's vGPUs")
