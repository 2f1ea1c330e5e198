"""Every kind of run the suite stores, prints or bundles, in one Enum beside ``store_keys`` (as mlperf_logging keeps
its constants in one module). A word here is the only spelling of a kind in the code: ``tests/test_layout.py`` finds
no kind compared or set as a literal elsewhere. *Kind* means this and nothing else in the suite's identifiers (a
profile's way to its GPU is ``gpu_access``, a workload's ``category``, a backend's ``BackendName``). Values stay as
stored and bundled: results already in a store or a bundle read the same."""

from __future__ import annotations

from enum import StrEnum

__all__ = ["BUNDLED", "LAUNCHED", "MEASURED", "SCENARIO_KINDS", "STORED", "RunKind"]


class RunKind(StrEnum):
    """A run's kind. A ``StrEnum``: a member is its word wherever a string is (a tag, JSON, an f-string)."""

    # a comparison run's kind, stored in bench.kind: its scenario's kind (``scenario.kind``)
    PLAIN = "plain"  # the phases of one scenario, each repeated
    MIXED = "mixed"  # per profile: CAD alone, CAD + ML, ML alone
    CONSOLIDATION = "consolidation"  # CAD guests added beside ML until a QoS target fails
    # a command's own parent run, stored in bench.kind (and in bench.role: where it sits)
    STUDY = "study"  # make study
    SIZING = "sizing"  # make size
    GPU_CHECK = "gpu-check"  # make gpu-check
    COMPARE = "compare"  # make compare: what changed between two runs (never called a comparison)
    # what a person launched, as make compare reads it and a bundle names it (never stored in bench.kind)
    BENCH = "bench"  # one scenario run (make bench without phases)
    COMPARISON = "comparison"  # a comparison run of any scenario kind (also bench.role's word for its place)
    PUBLISHED = "published"  # figures published by their authors (the reference study's bundle), not measured here


SCENARIO_KINDS = (RunKind.PLAIN, RunKind.MIXED, RunKind.CONSOLIDATION)  # scenario.kind's choices
STORED = (*SCENARIO_KINDS, RunKind.STUDY, RunKind.SIZING, RunKind.GPU_CHECK, RunKind.COMPARE)  # bench.kind's values
LAUNCHED = (RunKind.BENCH, RunKind.COMPARISON, RunKind.STUDY, RunKind.SIZING)  # what make compare sets side by side
BUNDLED = (*LAUNCHED, RunKind.PUBLISHED)  # a bundle's run.kind (suites/bundle/schema.json's enum)
MEASURED = (RunKind.BENCH, RunKind.COMPARISON)  # a launched run whose answer is its own figures
