"""What a scenario or a comparison looks like in MLflow: runs, their params, metrics, tags and artifacts.

A scenario is a parent run (nested under its comparison run when it is a
phase) with a child run per guest. Run names, the key names and what is
logged where are decided here; which store gets them is the Recorder's job.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from gpu_probe import vocab
from gpu_probe.shapes import JsonObject
from suites import store_keys as keys
from suites.config.scenario import with_old_names
from suites.errors import first_line, redact
from suites.record.store import Tracker, flatten, store_lock
from suites.run.outcome import ScenarioOutcome

RUN_STATUS = {"ok": "FINISHED", "partial": "FAILED", "failed": "FAILED", "interrupted": "KILLED"}
SCENARIO_ARTIFACTS = ("config.yaml", "inventory.json", "results.json", "samples.csv", "utilisation.png")
COMPARISON_ARTIFACTS = ("comparison.csv", "comparison.png")


def config_params(config: JsonObject) -> JsonObject:
    """A run's resolved config as its params: flattened, each renamed key under its old name too, and no
    credentials (a tracking_uri may carry them)."""
    return with_old_names({k: redact(v) if isinstance(v, str) else v for k, v in flatten(config).items()})


@dataclass
class Named:
    """How a run is named, the run it nests under (None: top level), and its own tags."""

    name: str
    under: str | None = None
    tags: dict[str, str] = field(default_factory=dict)


def scenario_run(outcome: ScenarioOutcome, tracker: Tracker, config_params: JsonObject, run_dir: Path,
                 named: Named) -> str:
    """Parent run for the scenario (nested under a comparison run where ``named`` says), a child per guest."""
    with store_lock(tracker.uri):
        parent = tracker.start(named.name, scenario_tags(outcome, named.tags), parent=named.under,
                               start_time=outcome.started_at)
        try:
            fill_scenario_run(outcome, tracker, parent, config_params, run_dir)
        except Exception as exc:  # a store that fails half-way (full disk, server gone) keeps no RUNNING half-run
            abandon(tracker, parent, exc)
            raise
    return parent


def abandon(tracker: Tracker, run_id: str, exc: Exception) -> None:
    """Mark a half-recorded run FAILED, saying where the whole record went (best effort: the store may be gone)."""
    try:
        tracker.tag(run_id, keys.INCOMPLETE, f"recording failed here ({first_line(exc)}); the whole run is in "
                                                "the fallback store if one took it, and always in its run directory")
        tracker.end(run_id, "FAILED")
    except Exception:
        pass


def fill_scenario_run(outcome: ScenarioOutcome, tracker: Tracker, parent: str, config_params: JsonObject,
                      run_dir: Path) -> None:
    """Everything a scenario run holds: params, metrics, tags, artifacts, a child run per guest; then its end."""
    tracker.params(parent, {**config_params, **outcome.inventory.as_params(),
                            **short_params(outcome, config_params)})
    tracker.metrics(parent, scenario_metrics(outcome))
    if outcome.reasons:
        tracker.tag(parent, keys.FAILURE, "; ".join(outcome.reasons))
    if outcome.samples.clock_events:
        tracker.tag(parent, keys.CLOCK_EVENTS, json.dumps(outcome.samples.clock_events))
    for name in SCENARIO_ARTIFACTS:
        tracker.artifact(parent, run_dir / name)
    for o in outcome.guests:
        child = tracker.start(f"{o.spec.guest_id}-{o.spec.workload}",
                              {keys.ROLE: keys.GUEST, keys.GUEST_ID: o.spec.guest_id,
                               keys.STATUS: o.result.status, keys.VALIDITY: o.validity,
                               keys.VALIDITY_REASON: o.validity_reason,
                               **viewset_tags(o.result.info)}, parent=parent,
                              start_time=outcome.started_at)
        tracker.params(child, {"guest_id": o.spec.guest_id, "profile": o.spec.profile,
                               "workload": o.spec.workload, "vcpus": ",".join(map(str, o.placement.vcpus)),
                               "gpus": o.placement.gpu_label, "framebuffer_MiB": o.spec.framebuffer_MiB,
                               "memory_MiB": o.spec.memory_MiB, **flatten(o.result.info, "info.")})
        tracker.metrics(child, {**o.result.metrics, **o.sampled})
        if o.result.error:
            tracker.tag(child, keys.FAILURE, o.result.error)
        tracker.artifact(child, o.log_path)
        wall = o.result.metrics.get(vocab.WALL_TIME.key)
        stopped = outcome.status == "interrupted" and not o.result.ok  # ended by the run's stop, not failed
        tracker.end(child, "FINISHED" if o.result.ok else "KILLED" if stopped else "FAILED",
                    outcome.started_at + wall if wall and outcome.started_at else outcome.ended_at)
    tracker.end(parent, RUN_STATUS[outcome.status], outcome.ended_at or None)


def viewset_tags(info: JsonObject) -> dict[str, str]:
    """A CAD guest's pixel verdict per viewset (``bench.viewset.<name>``: ok | mismatch), and ``bench.pixels``
    = mismatch when any viewset drew wrong pixels."""
    tags = {keys.viewset(vs): str(info[f"{vs}.status"]) for vs in info.get("viewsets", [])
            if f"{vs}.status" in info}
    if tags:
        tags[keys.PIXELS] = "mismatch" if "mismatch" in tags.values() else "ok"
    return tags


def scenario_tags(outcome: ScenarioOutcome, extra: dict[str, str] | None) -> dict[str, str]:
    return {keys.ROLE: keys.SCENARIO_RUN, keys.STATUS: outcome.status, **(extra or {}),
            keys.DATA_SOURCE: str(outcome.data.get("source")), keys.GPU_STATUS: outcome.inventory.gpu_status,
            keys.VALIDITY: outcome.validity, keys.VALIDITY_REASON: outcome.validity_reason,
            keys.HOST_BUSY: outcome.host_busy or "no"}


def short_params(outcome: ScenarioOutcome, config_params: JsonObject) -> JsonObject:
    """The same short names on every run, for MLflow's compare view across sweeps."""
    first = outcome.guests[0].spec if outcome.guests else None
    return {"profile": first.profile if first else None, "workload": first.workload if first else None,
            "framework": config_params.get("workload.framework"), "guests": len(outcome.guests),
            "gpus": config_params.get("profile.gpus"), "data.source": outcome.data.get("source")}


def scenario_metrics(outcome: ScenarioOutcome) -> JsonObject:
    ok = outcome.ok_guests
    return {**outcome.host_metrics, vocab.MAKESPAN.key: outcome.makespan_s, "guests_ok": len(ok),
            "guests_failed": len(outcome.guests) - len(ok),
            "images_per_sec_total": sum(o.result.metrics.get(vocab.IMAGES_PER_SEC.key, 0) for o in ok)}


def comparison_tags(scenario: str, kind: str, extra: dict[str, str] | None = None) -> dict[str, str]:
    return {keys.ROLE: keys.COMPARISON, keys.SCENARIO: scenario, keys.KIND: kind, **(extra or {})}


@dataclass
class ParentResults:
    """What a parent run (a comparison's, a campaign's) holds besides its files."""

    params: JsonObject
    metrics: dict[str, float]
    tags: dict[str, str] = field(default_factory=dict)  # verdicts, validity
    series: dict[str, list[tuple[int, float]]] = field(default_factory=dict)  # curves over a step (GPUs, guests)


def parent_results(tracker: Tracker, run_id: str, results: ParentResults, run_dir: Path) -> None:
    """Everything a parent run holds but its report: params, metrics, tags, curves, the table and plot (the run
    is not ended)."""
    with store_lock(tracker.uri):
        tracker.params(run_id, results.params)
        tracker.metrics(run_id, results.metrics)
        for key, value in results.tags.items():
            tracker.tag(run_id, key, value)
        for key, points in results.series.items():
            tracker.series(run_id, key, points)
        for name in COMPARISON_ARTIFACTS:
            tracker.artifact(run_id, run_dir / name)
