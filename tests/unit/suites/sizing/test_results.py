"""Tests of ``suites/sizing/results.py`` on consolidations recorded into a real store (tests/support/consolidations.py):
a consolidation read back as counts, with its doubts and worth; the newest finished one of a measurement found by its
key; reused only where measuring again would clear nothing, and never with sizing.reuse=false."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from types import SimpleNamespace

import pytest

from suites.record.store_reader import StoreReader
from suites.sizing import results
from suites.sizing.campaign import reuser
from tests.support.consolidations import planned_sizing, recorded

OK = {1: {"frame_ms": 40.4, "p95": 70.0, "rate": 990.0}, 2: {"frame_ms": 41.2, "p95": 80.0, "rate": 960.0}}
BUSY = "host busy in 15 of 15 phase(s) (other processes up to 180 % of a core > host_busy_pct=25)"


@pytest.mark.heavy
def test_a_consolidation_reads_back_as_its_steps_with_nothing_in_doubt(tmp_path: Path):
    _, _, plan, uri = planned_sizing(tmp_path)
    (part,) = plan.parts
    _, rid = recorded(uri, part, OK)
    got = results.read(StoreReader(uri), rid)
    assert [s.guests for s in got.counts] == [1, 2] and got.doubts == [] and got.skipped == []
    assert {label.rsplit("/", 1)[1] for label in got.phases} == {"ml", "cad", "n1", "n2"}


@pytest.mark.heavy
def test_the_newest_finished_consolidation_of_a_measurement_is_found_by_its_key(tmp_path: Path):
    _, _, plan, uri = planned_sizing(tmp_path)
    (part,) = plan.parts
    store = StoreReader(uri)
    assert results.stored(store, part.comp.cfg.experiment, part.key) is None
    _, first = recorded(uri, part, OK)
    _, second = recorded(uri, part, OK)
    recorded(uri, part._replace(key="another measurement"), OK)
    assert results.stored(store, part.comp.cfg.experiment, part.key) == second != first


@pytest.mark.heavy
def test_a_clean_one_is_reused_a_busy_hosts_is_measured_again_and_reuse_false_measures(tmp_path: Path):
    settings, _, plan, uri = planned_sizing(tmp_path)
    (part,) = plan.parts
    store, said = StoreReader(uri), []
    _, clean = recorded(uri, part, OK)
    assert results.reusable(store, part, settings, said.append) == (clean, "") and said == []
    assert results.reusable(store, part, dataclasses.replace(settings, reuse=False), said.append) is None
    _, busy = recorded(uri, part, OK, {"bench.host_busy": BUSY})  # the newest now: in doubt, and clearable
    assert results.reusable(store, part, settings, said.append) is None
    assert said == [f"size: stored consolidation {busy} is inconclusive: {BUSY}; to size: stop what else runs on this "
                    "host (or raise host_busy_pct) and size again: measuring again"]


@pytest.mark.heavy
def test_a_part_looked_up_before_and_after_its_lease_says_measuring_again_once(tmp_path: Path):
    """The campaign looks for a stored run before a part's lease and again after it (another sizing may have
    measured it meanwhile): the 'measuring again' paragraph was printed twice in a row."""
    settings, _, plan, uri = planned_sizing(tmp_path)
    (part,) = plan.parts
    recorded(uri, part, OK, {"bench.host_busy": BUSY})
    said: list[str] = []
    run = SimpleNamespace(reader=StoreReader(uri), nest=SimpleNamespace(recorder=SimpleNamespace(say=said.append)))
    reuse = reuser(part, settings)
    assert reuse(run) is None and reuse(run) is None  # type: ignore[arg-type]
    assert len(said) == 1 and said[0].endswith("measuring again"), said
