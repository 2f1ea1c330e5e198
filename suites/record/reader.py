"""Reading the store back: a mixed or consolidation comparison's phase numbers, from what MLflow holds (never
from a runner's memory).

Built from the phase runs and their guest runs through the same
:mod:`suites.run.mixed` functions the runner used, so a report and the run it
describes agree by construction. Rendering is :mod:`suites.render.mixed_report`'s.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, TypeAlias

from suites import store_keys as keys
from suites.config.schema import EXPERIMENT
from suites.run.marks import Mark, of_repeats
from suites.run.mixed import by_profile, consolidation_metrics
from suites.run.phase_numbers import PhaseNumbers
from suites.run_kinds import RunKind

# an MlflowClient, or a run it returned (mlflow is imported where a store is read: untyped here)
Mlflow: TypeAlias = Any


@dataclass
class MixedReport:
    mixed: dict[str, dict[str, float]] = field(default_factory=dict)  # profile -> derived figures
    consolidation: dict[str, float] = field(default_factory=dict)
    consolidation_profile: str = ""
    sources: list[str] = field(default_factory=list)  # comparison run ids read
    validity: dict[str, str] = field(default_factory=dict)  # phase label -> validity (weakest repeat)
    validity_reason: str = ""  # where it is not the usual one (a TCG VM's guests)
    references: dict[str, str] = field(default_factory=dict)  # profile -> the reference study's finding
    qos: dict[str, float] = field(default_factory=dict)  # the limits the verdicts judge against
    stop_reason: str = ""  # why the consolidation sweep ended
    header: dict[str, str] = field(default_factory=dict)  # host, GPU, date, git SHA of the runs read
    marks: dict[str, list[Mark]] = field(default_factory=dict)  # kind -> what marks its scores (run.marks)


def numbers_only(metrics: dict[str, Mlflow], skipped: list[str]) -> dict[str, float]:
    """A run's metrics as read back, those that are numbers: a store edited by hand or by another tool may hold a
    string where a figure was (each one skipped is said in ``skipped``, never a traceback)."""
    out = {}
    for key, value in metrics.items():
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            out[key] = float(value)
        else:
            skipped.append(f"{key}={value!r}")
    return out


def phase_numbers(client: Mlflow, comparison_id: str,
                  skipped: list[str] | None = None) -> dict[str, list[PhaseNumbers]]:
    """Each phase run under the comparison (every repeat, in run order), reduced to PhaseNumbers from its own and
    its guests' metrics (those that are numbers: the others are listed in ``skipped``)."""
    skipped = [] if skipped is None else skipped
    exp = client.get_run(comparison_id).info.experiment_id
    phases = client.search_runs([exp], keys.children_filter(comparison_id), max_results=1000)
    out: dict[str, list[PhaseNumbers]] = {}
    for run in sorted(phases, key=lambda r: r.info.start_time):
        label = run.data.tags.get(keys.PHASE)
        if not label:
            continue
        guests = client.search_runs([exp], keys.children_filter(run.info.run_id), max_results=1000)
        guests = sorted(guests, key=lambda g: g.data.tags.get(keys.GUEST_ID, ""))
        out.setdefault(label, []).append(PhaseNumbers.from_guests(
            numbers_only(run.data.metrics, skipped),
            [(g.data.params.get("workload", "?"), g.data.tags.get(keys.STATUS) == "ok",
              numbers_only(g.data.metrics, skipped)) for g in guests],
            [g.data.tags.get(keys.GUEST_ID, "?") for g in guests]))
    return out


def run_of_kind(client: Mlflow, run_id: str, kind: str, flag: str) -> Mlflow:
    """The run ``run_id`` (given as ``flag``), which must be a ``kind`` comparison; else one LookupError that says
    what the run is (a ``--mixed-run`` given a plain single run would make a report of question marks)."""
    from mlflow.exceptions import MlflowException

    try:
        run = client.get_run(run_id)
    except MlflowException as exc:
        if getattr(exc, "error_code", "") != "RESOURCE_DOES_NOT_EXIST":
            raise
        raise LookupError(f"{flag} {run_id}: no such run in this store") from None
    tags = run.data.tags
    if tags.get(keys.KIND) != kind:
        what = tags.get(keys.KIND) or tags.get(keys.ROLE) or "not a gpu-mixed-bench"
        raise LookupError(f"{flag} {run_id}: run {run.info.run_name!r} is a {what} run, not a {kind} "
                          f"comparison; leave {flag} out for the latest {kind} run")
    return run


def latest(client: Mlflow, experiment: str, kind: str) -> Mlflow:
    exp = client.get_experiment_by_name(experiment)
    if exp is None:
        return None
    runs = client.search_runs([exp.experiment_id], keys.tag_filter(keys.KIND, kind), max_results=1,
                              order_by=["attributes.start_time DESC"])
    return runs[0] if runs else None


def build(tracking_uri: str, experiment: str = EXPERIMENT, mixed_run: str | None = None,
          consolidation_run: str | None = None, latest_runs: bool = True) -> MixedReport:
    """The report's numbers from the store: the given comparison runs, else (``latest_runs``) the newest of each
    kind."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri)
    rep = MixedReport()
    find = (lambda kind: latest(client, experiment, kind)) if latest_runs else (lambda kind: None)
    mixed = run_of_kind(client, mixed_run, RunKind.MIXED, "--mixed-run") if mixed_run else find(RunKind.MIXED)
    cons = (run_of_kind(client, consolidation_run, RunKind.CONSOLIDATION, "--consolidation-run") if consolidation_run
            else find(RunKind.CONSOLIDATION))
    for run in (mixed, cons):
        if run is not None:
            describe(client, run, rep)
    if mixed is not None:
        phases = phase_numbers(client, mixed.info.run_id)
        rep.marks["mixed"] = run_marks(phases, mixed.data.params)
        flat = by_profile(phases)
        for key, value in flat.items():
            profile, name = key.split(".", 1)
            rep.mixed.setdefault(profile, {})[name] = value
        rep.sources.append(mixed.info.run_id)
    if cons is not None:
        phases = phase_numbers(client, cons.info.run_id)
        params = cons.data.params
        rep.marks["consolidation"] = run_marks(phases, params)
        rep.consolidation = consolidation_metrics(phases, float(params.get("qos_p95_frame_ms", "nan")),
                                                  float(params.get("qos_ml_slowdown_pct", "nan")),
                                                  float(params.get("host_busy_pct", "inf")))
        rep.consolidation_profile = next(iter(phases), "?/").split("/")[0]
        rep.stop_reason = params.get("stop_reason", "")
        rep.sources.append(cons.info.run_id)
    return rep


def run_marks(phases: dict[str, list[PhaseNumbers]], params: dict[str, str]) -> list[Mark]:
    """What marks a comparison's scores, from its phases (every repeat) as the runner judged them."""
    return of_repeats(phases, float(params.get("host_busy_pct", "inf")), params.get("scale", "full"))


def describe(client: Mlflow, comparison: Mlflow, rep: MixedReport) -> None:
    """What the report says about the runs besides their numbers: validity, references, limits, host."""
    tags, params = comparison.data.tags, comparison.data.params
    rep.validity.update({k.removeprefix(keys.VALIDITY_PREFIX): v for k, v in tags.items()
                         if k.startswith(keys.VALIDITY_PREFIX)})
    rep.validity_reason = tags.get(keys.VALIDITY_REASON) or rep.validity_reason
    rep.references.update({k[len("reference."):]: v for k, v in params.items() if k.startswith("reference.")})
    for key in ("qos_cad_slowdown_pct", "qos_ml_slowdown_pct", "qos_p95_frame_ms", "host_busy_pct"):
        if key in params:
            rep.qos[key] = float(params[key])
    phases = client.search_runs([comparison.info.experiment_id],
                                keys.children_filter(comparison.info.run_id), max_results=1)
    host = phases[0].data.params if phases else {}
    started = datetime.fromtimestamp(comparison.info.start_time / 1000, tz=UTC)
    rep.header = {"host": f"{host.get('host.hostname', '?')} ({host.get('host.cpu_model', '?')}, "
                          f"{host.get('host.cpus_usable', '?')} cores)",
                  "GPU": host.get("host.gpu_names", "?"), "date": started.strftime("%Y-%m-%d %H:%M UTC"),
                  "git SHA": host.get("host.git_sha", "?")}
    if params.get("scale") == "smoke":
        rep.header["run size"] = "+preset=smoke (a seconds-long check, not a measurement)"


def of_comparison(tracking_uri: str, experiment: str, comparison_id: str, kind: str) -> MixedReport:
    """The report of one comparison run (a ``mixed`` or ``consolidation`` scenario) and nothing else."""
    return build(tracking_uri, experiment, mixed_run=comparison_id if kind == RunKind.MIXED else None,
                 consolidation_run=comparison_id if kind == RunKind.CONSOLIDATION else None, latest_runs=False)
