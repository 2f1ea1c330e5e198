"""Tests of ``suites/store_keys.py``: the store's keys keep the spellings results already stored use."""

from __future__ import annotations

from suites import store_keys as keys


def test_every_key_is_a_bench_tag_and_none_is_spelled_twice():
    names = [n for n in keys.__all__ if n.isupper() and n != "VALUES" and getattr(keys, n) not in keys.VALUES]
    values = [getattr(keys, n) for n in names]
    assert all(v.startswith("bench.") for n, v in zip(names, values, strict=True) if n != "PARENT")
    assert len(set(values)) == len(values) and keys.PARENT == "mlflow.parentRunId"  # MLflow's own: read, not ours
    assert keys.KIND == "bench.kind" and keys.ROLE == "bench.role" and keys.HOST_BUSY == "bench.host_busy"


def test_the_keys_with_a_name_in_them_read_as_stored():
    assert keys.validity_of("1-gpu") == "bench.validity.1-gpu" and "bench.validity.1-gpu".startswith(
        keys.VALIDITY_PREFIX)
    assert keys.verdict("cpu", "time") == "bench.verdict.cpu.time"
    assert keys.time_basis("cpu") == "bench.time_basis.cpu" and keys.viewset("cad") == "bench.viewset.cad"
    assert keys.check("b1") == "bench.check.b1"
    assert keys.tag_filter(keys.KIND, "sizing") == "tags.`bench.kind` = 'sizing'"
    assert keys.children_filter("abc") == "tags.mlflow.parentRunId = 'abc'"


def test_the_role_values_read_as_stored_and_each_is_listed():
    """A run's ROLE values beside their keys: the words stored runs hold, every constant among VALUES; the roles that
    are a command's own run are its RunKind (suites/run_kinds.py), spelled there only."""
    assert keys.VALUES == ("guest", "scenario", "comparison", "sweep")
    words = {n for n in keys.__all__ if n.isupper() and isinstance(getattr(keys, n), str)
             and not getattr(keys, n).startswith(("bench.", "mlflow."))}
    assert {getattr(keys, n) for n in words} == set(keys.VALUES)
