"""``make study`` read back from the store: the study run, its parts' comparison runs, what was skipped, and the
mixed scenarios' report among them (:func:`suites.record.reader.build`)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from suites import store_keys as keys
from suites.config.schema import EXPERIMENT
from suites.record.reader import MixedReport, build
from suites.record.store_reader import StoreReader
from suites.run_kinds import RunKind


@dataclass
class PartResult:
    """One comparison of a study as the store holds it."""

    run_id: str
    metrics: dict[str, float]
    tags: dict[str, str]


@dataclass
class ReferenceStudy:
    """``make study`` read back: its parts' comparison runs, the mixed scenarios' report, what was skipped."""

    run_id: str
    params: dict[str, str]
    parts: dict[str, PartResult] = field(default_factory=dict)  # part name -> its comparison run
    skips: list[tuple[str, str]] = field(default_factory=list)  # (what, why)
    episode_2: MixedReport = field(default_factory=MixedReport)
    header: dict[str, str] = field(default_factory=dict)
    status: str = "FINISHED"  # the study run's: KILLED or FAILED where it stopped before its end
    stopped: str = ""  # why it stopped (bench.stopped), where it did


def latest_study(tracking_uri: str, experiment: str = EXPERIMENT) -> str | None:
    run = StoreReader(tracking_uri).latest(experiment, RunKind.STUDY)
    return run.run_id if run is not None else None


def read_study(tracking_uri: str, experiment: str, study_id: str) -> ReferenceStudy:
    """A ``make study`` run and the comparison runs nested under it, from the store alone."""
    store = StoreReader(tracking_uri)
    run = store.of_kind(study_id, RunKind.STUDY, "--study")
    try:
        skips = [(str(what), str(why)) for what, why in json.loads(run.tags.get(keys.SKIPS, "[]"))]
    except ValueError:  # a tag is capped in length: a very long list may not parse
        skips = [("skip list", "not readable from the store (tag bench.skips truncated)")]
    out = ReferenceStudy(study_id, dict(run.params), skips=skips, status=run.status,
                         stopped=run.tags.get(keys.STOPPED, ""))
    mixed = cons = None
    for child in store.children(study_id):
        part = child.tags.get(keys.STUDY_PART)
        if not part:
            continue
        out.parts[part] = PartResult(child.run_id, dict(child.metrics), dict(child.tags))
        kind = child.tags.get(keys.KIND)
        mixed = child.run_id if kind == RunKind.MIXED else mixed
        cons = child.run_id if kind == RunKind.CONSOLIDATION else cons
        out.header = out.header or store.header(child.run_id)
    out.header = out.header or store.header(study_id)  # a study stopped before its first part: its own run's
    if mixed or cons:
        out.episode_2 = build(tracking_uri, experiment, mixed, cons, latest_runs=False)
    return out
