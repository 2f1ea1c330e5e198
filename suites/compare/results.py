"""A run read back as the figures ``make compare`` sets side by side: each with its repeats, its unit and which way
is better, its validity and the marks that keep a verdict off it; and the set-up it ran on (its params).

A run is what a person launched (a root of the store's run tree): a ``bench`` run (one scenario), a ``comparison``
(its phases), a ``study`` (its parts' comparisons) or a ``sizing`` (its answer: N safe..point per profile, the
recommendation and what binds it). A figure of a comparison is one per phase: its repeats are the phase's scenario
runs (``scenario.repeats``); a bench run's single scenario is one repeat of each (no spread).
"""

from __future__ import annotations

import datetime
import math
import re
import statistics
from dataclasses import dataclass, field

from gpu_probe import vocab
from suites import store_keys as keys
from suites.bundle import Bundle
from suites.record.store_reader import StoredRun, StoreReader
from suites.run_kinds import RunKind
from suites.validity import ENFORCED, NOT_ENFORCED, VALIDITY, weakest

__all__ = ["MAKESPAN", "Figure", "RunFigures", "from_bundle", "kind_of", "read"]

SMOKE = "smoke"
TIME = "time"  # workload.size_by=time: a run sized to a window (suites/workloads/timing.py)
MAKESPAN = "makespan s"  # a phase's figure: its start barrier to its last result


@dataclass
class Figure:
    """One figure over its repeats (a phase's scenario runs), with what keeps a verdict off it."""

    name: str
    unit: str
    higher_is_better: bool
    values: list[float] = field(default_factory=list)
    marks: list[str] = field(default_factory=list)  # the kinds of mark on it (host busy, smoke sizes...): each voids
    # a verdict; what each says is its run's (RunFigures.marked), said once per run
    validity: str = ENFORCED  # the weakest of its runs'


@dataclass
class RunFigures:
    """A run as ``make compare`` reads it."""

    run: StoredRun
    kind: str
    setup: dict[str, str]  # its params (a comparison's: with its first phase's), what two set-ups are compared on
    figures: dict[str, Figure] = field(default_factory=dict)
    answers: dict[str, str] = field(default_factory=dict)  # a sizing's: what it answered, per line
    marked: dict[str, list[str]] = field(default_factory=dict)  # a kind of mark -> what it said, once per run marked
    scenarios: int = 0  # the scenario runs read (a comparison's phase repeats): what a mark's count is out of

    def mark_lines(self) -> dict[str, str]:
        """Each kind of mark once: how many of its scenario runs it marks, and what it said (its first reading,
        and how many others differ)."""
        out = {}
        for kind, said in self.marked.items():
            seen = list(dict.fromkeys(said))
            count = f" in {len(said)} of {self.scenarios} runs" if self.scenarios > 1 and kind in PER_RUN else ""
            more = f" (and {len(seen) - 1} other reading(s))" if len(seen) > 1 else ""
            first = re.sub(rf"^{re.escape(kind)}( in \d+ of \d+ runs)?:\s*", "", seen[0])  # said once, not nested
            out[kind] = f"{kind}{count}: {first}{more}"
        return out

    @property
    def label(self) -> str:
        return f"{self.run.name} ({self.run.run_id[:8]})"

    @property
    def started(self) -> str:
        """When it started, local time, to the minute."""
        return datetime.datetime.fromtimestamp(self.run.start_time_ms / 1000).strftime("%Y-%m-%d %H:%M")


def kind_of(run: StoredRun) -> str:
    """bench, comparison, study or sizing; '' for anything else (a guest, a sweep, a gpu-check, a compare run)."""
    kind, role = run.tags.get(keys.KIND, ""), run.tags.get(keys.ROLE, "")
    if kind in (RunKind.STUDY, RunKind.SIZING):
        return kind
    return {keys.COMPARISON: RunKind.COMPARISON, keys.SCENARIO_RUN: RunKind.BENCH}.get(role, "")


def read(store: StoreReader, run: StoredRun) -> RunFigures:
    """``run``'s figures and set-up, from the store (every scenario run under it, and their guests)."""
    kind = kind_of(run)
    out = RunFigures(run, kind, dict(run.params))
    if kind == RunKind.BENCH:
        add_scenario(store, out, run, "", [])
    elif kind == RunKind.COMPARISON:
        add_comparison(store, out, run, "")
    elif kind == RunKind.STUDY:
        for part in store.children(run.run_id):
            add_comparison(store, out, part, part.tags.get(keys.STUDY_PART, part.name) + " / ")
    elif kind == RunKind.SIZING:
        out.answers = sizing_answers(run)
    if run.status not in ("FINISHED", ""):  # given by hand (--latest takes finished runs only): its figures marked
        ended = f"ended {run.status}"
        out.marked[ended] = ["what it measured before it stopped"]
        for fig in out.figures.values():
            fig.marks += [ended]
    return out


def from_bundle(bundle: Bundle) -> RunFigures:
    """A published result read as a run: its figures from their raw repeats (its own summaries are not read), its
    marks, its set-up (what it lets a reader see) and a sizing's answers."""
    doc = bundle.doc
    name = f"bundle {bundle.source.rsplit('/', 1)[-1]}: {doc['run']['name']}"
    run = StoredRun(doc["run"]["id"], "", name, "FINISHED", 0, {keys.SCENARIO: doc["run"]["scenario"]},
                    dict(doc["setup"]), {})
    out = RunFigures(run, doc["run"]["kind"], dict(doc["setup"]), answers=dict(doc["answers"]),
                     marked={kind: [said] for kind, said in doc["marks"].items()})
    for f in doc["figures"]:
        validity = f["validity"] if f["validity"] in VALIDITY else NOT_ENFORCED  # a word it does not know: the least
        out.figures[f["name"]] = Figure(f["name"], f["unit"], f["higher_is_better"], list(f["values"]),
                                        list(f["marks"]), validity)
    out.scenarios = max((len(f.values) for f in out.figures.values()), default=0)
    return out


def add_comparison(store: StoreReader, out: RunFigures, comparison: StoredRun, prefix: str) -> None:
    """A comparison's phases, every repeat; a mark on its score (busy, smoke, overlap, missed target) marks all."""
    marks = [(k, m) for k, m in (("inconclusive", comparison.tags.get(keys.INCONCLUSIVE, "")),
                                 ("marked score", comparison.tags.get(keys.MARKS, ""))) if m]
    for kind, said in marks:  # the comparison's own: said once, whatever its phases
        out.marked.setdefault(kind, []).append(said)
    for phase in store.children(comparison.run_id):
        if phase.tags.get(keys.PHASE):
            add_scenario(store, out, phase, prefix + phase.tags[keys.PHASE] + " / ", [k for k, _ in marks])


def add_scenario(store: StoreReader, out: RunFigures, scenario: StoredRun, prefix: str, kinds: list[str]) -> None:
    """One scenario run as one repeat of each of its figures: its makespan, and per workload its ML guests'
    images/s (summed) and train time (mean), its CAD guests' fps (summed) and p95 frame time (the worst)."""
    if not out.figures:  # the first scenario: a comparison's, study's set-up is its first phase's (they share it)
        out.setup = {**scenario.params, **out.setup}
    mine = run_marks(scenario)
    out.scenarios += 1
    for kind, said in mine:
        out.marked.setdefault(kind, []).append(said)
    own = [k for k, _ in mine] + kinds
    validity = scenario.tags.get(keys.VALIDITY, ENFORCED)
    per: dict[str, list[StoredRun]] = {}
    for guest in store.children(scenario.run_id):
        per.setdefault(guest.params.get("workload", "?"), []).append(guest)
    values = {(prefix + MAKESPAN, "s", False): figure(scenario.metrics.get(vocab.MAKESPAN.key, math.nan))}
    for workload, guests in sorted(per.items()):
        values.update(workload_values(prefix + workload, guests))
    for (name, unit, higher), value in values.items():
        if math.isinf(value):  # a stored inf (or MLflow's stand-in for one): its figure marked, its value left out
            fig = out.figures.setdefault(name, Figure(name, unit, higher, validity=validity))
            fig.marks += [NOT_A_FIGURE] if NOT_A_FIGURE not in fig.marks else []
            out.marked.setdefault(NOT_A_FIGURE, []).append(f"{name}: {NOT_A_FIGURE_SAID}")
            continue
        if not (isinstance(value, float) and math.isfinite(value)):
            continue
        fig = out.figures.setdefault(name, Figure(name, unit, higher, validity=validity))
        fig.values.append(value)
        fig.marks += [m for m in own if m not in fig.marks]
        fig.validity = weakest([fig.validity, validity])


def workload_values(name: str, guests: list[StoredRun]) -> dict[tuple[str, str, bool], float]:
    """A workload's figures over its guests in one scenario run (a failed guest's figures are left out). A guest
    sized by time has no train time of equal work: its train time is its window, whatever its speed."""
    ok = [{k: figure(v) for k, v in g.metrics.items()} for g in guests if g.tags.get(keys.STATUS, "ok") == "ok"]
    by_time = any(g.params.get("info.sized_by") == TIME for g in guests)
    if any(vocab.FPS.key in m for m in ok):  # a CAD replay
        return {(f"{name} fps", vocab.FPS.unit, True): math.fsum(m.get(vocab.FPS.key, math.nan) for m in ok),
                (f"{name} p95 frame ms", "ms", False): max(
                    (m.get(vocab.scoped_key("", vocab.FRAME_TIME, "p95"), math.nan) for m in ok), default=math.nan)}
    rates = [m[vocab.IMAGES_PER_SEC.key] for m in ok if m.get(vocab.IMAGES_PER_SEC.key, 0) > 0]
    times = [m[vocab.TRAIN_TIME.key] for m in ok if vocab.TRAIN_TIME.key in m]
    return {(f"{name} images/s", vocab.IMAGES_PER_SEC.unit, True): math.fsum(rates) if rates else math.nan,
            (f"{name} train s", "s", False): statistics.fmean(times) if times and not by_time else math.nan}


# No figure of this suite (images/s, seconds, fps, ms) comes near these: MLflow keeps a stored inf as +-1.8e308
# (finite to Python), and a ratio of 1e-300 to 1e300 overflows; either is no measurement.
MAX_FIGURE, MIN_FIGURE = 1e15, 1e-12
NOT_A_FIGURE = "not a figure"
NOT_A_FIGURE_SAID = ("a repeat's stored value is infinite (or MLflow's stand-in for it), or past 1e15 or below 1e-12 "
                     "in size: left out")
HOST_BUSY, SMOKE_SIZES = "host busy", "smoke sizes"
PER_RUN = (HOST_BUSY, SMOKE_SIZES, "failed", "partial", "interrupted", NOT_A_FIGURE)  # counted out of its runs


def figure(value: float) -> float:
    """A stored value as a figure: itself, or inf (signed) where its size is past :data:`MAX_FIGURE` or below
    :data:`MIN_FIGURE` (zero stays zero)."""
    if math.isnan(value) or value == 0 or MIN_FIGURE <= abs(value) <= MAX_FIGURE:
        return value
    return math.copysign(math.inf, value)


def run_marks(scenario: StoredRun) -> list[tuple[str, str]]:
    """What voids a verdict on a scenario run's figures, as (kind, what it says): another load on the host, smoke
    sizes, a failure."""
    out = []
    busy = scenario.tags.get(keys.HOST_BUSY, "no")
    if busy not in ("", "no"):  # its words as recorded, never wrapped in themselves ("host busy (host busy (...))")
        out.append((HOST_BUSY, busy[len(HOST_BUSY) + 2:-1] if busy.startswith(f"{HOST_BUSY} (") else busy))
    if scenario.params.get("scale") == SMOKE:
        out.append((SMOKE_SIZES, "scale=smoke: a check of the machinery, not a measurement"))
    status = scenario.tags.get(keys.STATUS, "ok")
    if status != "ok":
        out.append((status, scenario.tags.get(keys.FAILURE, "a guest did not finish")))
    return out


def sizing_answers(run: StoredRun) -> dict[str, str]:
    """A sizing's answer as lines to set side by side: the recommendation, then each profile's N safe..point and
    what binds it."""
    out = {"recommendation": run.tags.get(keys.ANSWER, "-"), "recommended profile": run.params.get("recommended", "-"),
           "what binds it": run.params.get("binds", "-"),
           "validity": run.tags.get(keys.VALIDITY, run.params.get("validity", "-"))}
    if run.tags.get(keys.INCONCLUSIVE):
        out["inconclusive"] = run.tags[keys.INCONCLUSIVE]
    profiles = sorted({k.split(".")[0] for k in run.metrics if k.endswith((".n_safe", ".n_point"))})
    for p in profiles:
        safe, point = (run.metrics.get(f"{p}.{k}", math.nan) for k in ("n_safe", "n_point"))
        out[f"{p} N safe..point"] = "-" if math.isnan(point) else (
            f"{safe:.0f}..{point:.0f}" if safe == safe else f"-..{point:.0f}")
    return out
