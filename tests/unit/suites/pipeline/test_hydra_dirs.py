"""Tests of ``suites/pipeline/hydra_dirs.py``."""

from __future__ import annotations

from suites.pipeline.hydra_dirs import quoted


def test_the_pinned_run_dir_reads_back_verbatim_through_hydras_grammar():
    from hydra.core.override_parser.overrides_parser import OverridesParser

    parser = OverridesParser.create()
    for value in ["/tmp/a b", "/tmp/c'd", "/tmp/e\\f", "/tmp/x\\", "a\\'b", '"q"', "/t/=,[]{}", "/tmp/é"]:
        assert parser.parse_override(f"hydra.run.dir={quoted(value)}").value() == value, value
