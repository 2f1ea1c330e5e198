"""Tests of ``suites/pipeline/prechecks.py``."""

from __future__ import annotations


def test_the_quote_hint_for_a_value_with_both_quotes_is_what_hydra_reads_back():
    from hydra.core.override_parser.overrides_parser import OverridesParser

    from suites.pipeline.prechecks import unparseable

    hint = unparseable("experiment=a'b\"é", ValueError("x")).split("quote the value: ", 1)[1]
    assert OverridesParser.create().parse_override(hint).value() == "a'b\"é"
