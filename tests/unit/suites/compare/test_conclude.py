"""Tests of ``suites/compare/conclude.py``: figures side by side, marks keep a verdict off, the nightly gate."""

from __future__ import annotations

import pytest

from suites.compare.conclude import MARKED, changes, gate
from suites.compare.results import Figure
from suites.compare.settings import Gate, parse_gate


def fig(values: list[float], marks: list[str] | None = None, validity: str = "not enforced",
        higher: bool = True) -> Figure:
    return Figure("mnist-torch images/s", "images/s", higher, values, marks or [], validity)


def test_a_slower_b_is_slower_and_a_time_that_grew_is_slower_too():
    (c,) = changes({"x": fig([100.0, 101.0, 99.0])}, {"x": fig([83.0, 84.0, 82.0])})
    assert c.verdict == "slower" and c.ratio.high < 1 and c.marks == []
    (t,) = changes({"t": fig([10.0, 10.1, 9.9], higher=False)}, {"t": fig([12.0, 12.1, 11.9], higher=False)})
    assert t.verdict == "slower" and t.ratio.low > 1 and t.worse_pct > 15


def test_a_mark_on_either_side_keeps_the_verdict_off_and_says_which_side():
    busy = "host busy (other processes up to 180 % of a core)"
    (c,) = changes({"x": fig([100.0, 101.0, 99.0])}, {"x": fig([83.0, 84.0, 82.0], [busy])})
    assert c.verdict == MARKED and c.marks == [f"B: {busy}"] and c.worse_pct != c.worse_pct  # NaN: never gated


def test_a_validity_that_differs_is_not_the_same_measurement_and_equal_ones_compare():
    (c,) = changes({"x": fig([100.0, 101.0], validity="enforced")}, {"x": fig([90.0, 91.0], validity="emulated")})
    assert c.verdict == MARKED and c.marks == ["validity enforced → emulated: not the same measurement"]
    (same,) = changes({"x": fig([100.0, 101.0, 99.0])}, {"x": fig([100.0, 100.5, 99.5])})
    assert same.verdict == "no change" and same.validity == "not enforced"


def test_only_figures_both_hold_are_compared_in_as_order():
    a = {"b": fig([1.0, 1.0]), "a": fig([2.0, 2.0]), "only-a": fig([3.0])}
    assert [c.name for c in changes(a, {"a": fig([2.0, 2.0]), "b": fig([1.0, 1.0]), "only-b": fig([1.0])})] == \
        ["b", "a"]


def test_the_gate_takes_a_figure_slower_than_its_rule_at_the_intervals_bound_not_its_median():
    slower = changes({"x": fig([100.0, 101.0, 99.0])}, {"x": fig([92.0, 93.0, 91.0])})  # 8 % slower at the median
    bound = slower[0].worse_pct
    assert slower[0].verdict == "slower" and 5 < bound < 8
    assert gate(slower, Gate("slower", 5.0)) == slower and gate(slower, Gate("slower", bound + 0.1)) == []


@pytest.mark.parametrize("bad", ["faster:5", "slower", "slower:x", "slower:-1", "slower:nan"])
def test_a_gate_that_is_not_slower_percent_is_refused_saying_what_is(bad: str):
    with pytest.raises(ValueError, match=r"give slower:<percent>, e.g. --fail-on slower:5"):
        parse_gate(bad)
    assert parse_gate("slower:2.5") == Gate("slower", 2.5)
