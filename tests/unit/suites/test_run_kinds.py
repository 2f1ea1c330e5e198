"""Tests of ``suites/run_kinds.py``: every run kind keeps the word results already stored and bundled hold, and each
place that lists kinds (the scenario config, the bundle schema, make compare) lists the same ones."""

from __future__ import annotations

import json

from omegaconf import OmegaConf

from suites.run_kinds import BUNDLED, LAUNCHED, MEASURED, SCENARIO_KINDS, STORED, RunKind
from tests.support.helpers import REPO


def test_each_kind_is_its_stored_word_wherever_a_string_is():
    assert [k.value for k in RunKind] == ["plain", "mixed", "consolidation", "study", "sizing", "gpu-check", "compare",
                                          "bench", "comparison", "published"]
    assert f"{RunKind.GPU_CHECK}-x" == "gpu-check-x" and json.dumps({"kind": RunKind.STUDY}) == '{"kind": "study"}'
    assert RunKind.MIXED == "mixed" and "sizing" in STORED and RunKind("consolidation") is RunKind.CONSOLIDATION


def test_the_sets_of_kinds_say_what_is_stored_and_what_a_person_launched():
    assert set(STORED).isdisjoint({RunKind.BENCH, RunKind.COMPARISON, RunKind.PUBLISHED})  # never in bench.kind
    assert set(SCENARIO_KINDS) < set(STORED) and set(MEASURED) < set(LAUNCHED) < set(BUNDLED)
    assert set(STORED) | set(BUNDLED) == set(RunKind)


def test_the_bundle_schema_and_the_scenario_configs_list_these_kinds():
    schema = json.loads((REPO / "suites" / "bundle" / "schema.json").read_text())
    assert schema["properties"]["run"]["properties"]["kind"]["enum"] == list(BUNDLED)
    given = {OmegaConf.load(p).get("kind", RunKind.PLAIN) for p in (REPO / "configs" / "scenario").glob("*.yaml")}
    assert given <= set(SCENARIO_KINDS) and {RunKind.MIXED, RunKind.CONSOLIDATION} <= given
