"""Tests of ``suites/config/overrides.py``: every value a command writes into another run's command line reads back
through Hydra's own override parser as the value it was."""

from __future__ import annotations

import pytest
from hydra.core.override_parser.overrides_parser import OverridesParser

from suites.config.overrides import override, value_text

VALUES = ["m60-2q", "a b", "x=1", ["workload.size=small", "workload.viewsets=[a,b]"], [1, 2, 4], True, None,
          "true", "1.5", "it's", "back\\slash", {"cad": 40, "ml": 4}, 3.5, "sqlite:////tmp/x.db", "/tmp/a b/c", [],
          "null", "", "end\\", "q\\'x"]


@pytest.mark.parametrize("value", VALUES, ids=[repr(v) for v in VALUES])
def test_a_value_reads_back_through_hydras_parser_as_itself(value: object):
    assert OverridesParser.create().parse_override(override("k", value)).value() == value


def test_a_nested_list_of_overrides_is_quoted_as_a_sizing_writes_it():
    assert override("scenario.mixed.cad.overrides", [override("workload.size", "small"),
                                                     override("workload.viewsets", ["product", "mechanical"])]) == \
        "scenario.mixed.cad.overrides=['workload.size=small','workload.viewsets=[product,mechanical]']"
    assert override("preset", "smoke", "+") == "+preset=smoke" and value_text(False) == "false"
    with pytest.raises(TypeError, match="no override grammar for set"):
        value_text({1})
