"""The mixed CAD + ML scenarios: three phases per profile, and consolidation until QoS fails.

``mixed`` (episode 2 of the M60 study): for each profile, phase ``cad`` (CAD
guests alone), ``mixed`` (CAD + ML at once), ``ml`` (ML alone). Derived per
profile: % increase of CAD run time and of ML training time when mixed,
sequential total (cad + ml makespans) vs concurrent makespan, CPU/GPU
utilisation and energy per phase.

``consolidation`` (View Planner / VMmark style): ML alone first, then 1, 2, ...
CAD guests (+ the ML guest) until a count misses QoS: every CAD guest's p95
frame time <= threshold and ML slowdown <= threshold. The score is the
largest count that met QoS.

Every derived number comes from :class:`PhaseNumbers` through :func:`derive`
and :func:`qos`, whether the numbers were just measured or read back from
MLflow by the report, so the two cannot disagree. The phases themselves are
composed by :func:`suites.config.compose.mixed_phases`.
"""

from __future__ import annotations

import math
import statistics

from gpu_probe import vocab
from gpu_probe.shapes import JsonObject
from gpu_probe.stats import Interval, inconclusive, judge_limit, ratio_interval, summarize
from suites.config.compose import consolidation_memory, mixed_profiles
from suites.config.scenario import CAD_ALONE as CAD
from suites.config.scenario import CAD_AND_ML, PhaseConfig
from suites.config.scenario import ML_ALONE as ML
from suites.config.schema import BenchConfig
from suites.run import marks
from suites.run.outcome import ScenarioOutcome
from suites.run.phase_numbers import PhaseNumbers
from suites.run_kinds import RunKind


def pct_increase(mixed: float, alone: float) -> float:
    return (mixed / alone - 1.0) * 100.0 if alone and not math.isnan(alone) else math.nan


def ml_slowdown_pct(mixed: PhaseNumbers, alone: PhaseNumbers) -> float:
    """How much longer the ML guest takes per image beside CAD than alone (its train time for the same work): from
    the steady rates, since a run sized by time does a different amount of work in each phase."""
    return pct_increase(1 / mixed.ml_images_per_sec, 1 / alone.ml_images_per_sec) \
        if mixed.ml_images_per_sec > 0 and alone.ml_images_per_sec > 0 else math.nan


FAILED = "failed_guests"  # a profile's guests that failed in any of its phases and repeats (derive's figure)
# Below this overlap of two guests' timed windows a slowdown measured between them is no verdict: one of them ran
# partly alone (a 0.1 s ML run beside a seconds-long CAD replay measured start-up noise).
MIN_OVERLAP_PCT = 90.0


def overlap_shortfall(overlap_pct: float) -> str:
    """'inconclusive (overlap N %)' where the guests' windows overlapped less than MIN_OVERLAP_PCT, else ''."""
    if overlap_pct == overlap_pct and overlap_pct < MIN_OVERLAP_PCT:
        return f"inconclusive (overlap {overlap_pct:.0f} % < {MIN_OVERLAP_PCT:g} %)"
    return ""


def derive(phases: dict[str, PhaseNumbers]) -> dict[str, float]:
    """The mixed scenario's per-profile figures from its three phases."""
    cad, mixed, ml = (phases.get(p, PhaseNumbers()) for p in (CAD, CAD_AND_ML, ML))
    # sequential: the same work one after the other. The ML guest is sized by time, so its alone phase trained a
    # different number of images than beside CAD: its makespan is scaled to the mixed phase's images.
    work = mixed.ml_images / ml.ml_images if mixed.ml_images > 0 and ml.ml_images > 0 else 1.0
    # ... and so is a CAD replay beside it (workload.min_replay_s): its alone phase scaled to the frames it rendered
    frames = mixed.cad_frames / cad.cad_frames if mixed.cad_frames > 0 and cad.cad_frames > 0 else 1.0
    sequential = cad.makespan_s * frames + ml.makespan_s * work
    out = {
        "cad_run_time_increase_pct": pct_increase(mixed.cad_frame_s, cad.cad_frame_s),  # per frame: equal work
        "ml_train_time_increase_pct": ml_slowdown_pct(mixed, ml),
        vocab.OVERLAP.key: mixed.overlap_pct,
        "cad_p95_frame_ms_alone": summarize(cad.cad_p95_frame_ms).mean,
        "cad_p95_frame_ms_mixed": summarize(mixed.cad_p95_frame_ms).mean,
        "sequential_s": sequential,
        "concurrent_s": mixed.makespan_s,
        "concurrent_vs_sequential": mixed.makespan_s / sequential if sequential else math.nan,
    }
    for name, p in ((CAD, cad), (CAD_AND_ML, mixed), (ML, ml)):
        out[f"{name}.host_cpu_pct"] = p.host_cpu_pct
        out[f"{name}.gpu_util_pct"] = p.gpu_util_pct
        out[f"{name}.energy_J"] = p.energy_J
        out[f"{name}.images_per_J"] = p.ml_images / p.energy_J if p.energy_J > 0 else math.nan
        out[f"{name}.frames_per_J"] = p.cad_frames / p.energy_J if p.energy_J > 0 else math.nan
    out[vocab.HOST_OTHER_CPU.key] = max((p.host_other_cpu_pct for p in (cad, mixed, ml)
                                         if p.host_other_cpu_pct == p.host_other_cpu_pct), default=math.nan)
    out[FAILED] = float(cad.failed + mixed.failed + ml.failed)  # a guest that died: its phase is not a measurement
    return out


FAILED_GUESTS = "guest(s) failed"  # a count's reason where it was not measured whole (a failure, an interrupt)


def qos(count: PhaseNumbers, ml_alone: PhaseNumbers | None, p95_ms: float, ml_pct: float,
        busy_pct: float = math.inf) -> tuple[bool, str]:
    """Does a consolidation count meet QoS? (verdict, reason when not: 'inconclusive (...)' where the count cannot
    be judged, a busy host's or a blank rate's)."""
    if count.failed:
        return False, f"{count.failed} {FAILED_GUESTS}"
    busy = max((p.host_other_cpu_pct for p in (count, ml_alone) if p is not None and p.host_other_cpu_pct > busy_pct),
               default=None)
    if busy is not None:
        return False, f"inconclusive (host busy: other processes {busy:.0f} % of a core > host_busy_pct={busy_pct:g})"
    worst = max(count.cad_p95_frame_ms, default=math.nan)
    if not worst <= p95_ms:
        return False, f"CAD p95 frame time {worst:.1f} ms > {p95_ms:g} ms"
    if ml_alone is not None:
        if overlap_shortfall(count.overlap_pct):  # a slowdown measured partly alone: no verdict (an absolute p95 is)
            return False, overlap_shortfall(count.overlap_pct)
        slow = ml_slowdown_pct(count, ml_alone)
        if slow != slow:  # a rate that is blank: no slowdown was measured, so none is judged
            return False, "inconclusive (ML rate blank: its timed window too short for a rate)"
        if not slow <= ml_pct:
            return False, f"ML slowdown {slow:.1f} % > {ml_pct:g} %"
    return True, ""


def paired(baseline: list[PhaseNumbers] | None, i: int) -> PhaseNumbers | None:
    """The baseline's repeat beside a count's repeat ``i``: the one of its index, the last where there are fewer."""
    return baseline[min(i, len(baseline) - 1)] if baseline else None


def count_qos(repeats: list[PhaseNumbers], alone: list[PhaseNumbers] | None, p95_ms: float, ml_pct: float,
             busy_pct: float = math.inf) -> tuple[bool, str]:
    """A consolidation count over its repeats (VMmark's rule: a tile that misses fails the count): each repeat judged
    by :func:`qos` beside the ML-alone repeat :func:`paired` with it."""
    for i, count in enumerate(repeats):
        ok, why = qos(count, paired(alone, i), p95_ms, ml_pct, busy_pct)
        if not ok:
            return False, why + (f" (repeat {i + 1}/{len(repeats)})" if len(repeats) > 1 else "")
    return True, ""


def miss_words(why: str) -> str:
    """How a count that did not meet QoS is said: 'QoS missed' only where it was measured to miss; an inconclusive
    count (a busy host, too few repeats) or one whose guests failed (an interrupt cut it off) is 'no verdict',
    never a miss."""
    return "no verdict" if why.startswith("inconclusive") or FAILED_GUESTS in why else "QoS missed"


def numbers(outcome: ScenarioOutcome) -> PhaseNumbers:
    # exactly the phase run's MLflow metrics (suites.record.mlflow_runs), so the report reads the same numbers back
    phase = {**outcome.host_metrics, vocab.MAKESPAN.key: outcome.makespan_s or math.nan}
    return PhaseNumbers.from_guests(phase, [(o.spec.workload, o.result.ok, o.result.metrics) for o in outcome.guests],
                                    [o.spec.guest_id for o in outcome.guests])


# --- the run: what a comparison asks of a mixed scenario ---------------------------------------------------------
class MixedRun:
    """A mixed or consolidation scenario's state over its phases: whether to go on after each, and what it adds at
    the end."""

    def __init__(self, cfg: BenchConfig) -> None:
        self.cfg, self.kind, self.settings = cfg, cfg.scenario.kind, cfg.scenario.mixed
        self.numbers: dict[str, list[PhaseNumbers]] = {}  # per phase label, one per repeat
        self.verdicts: dict[str, tuple[bool, str]] = {}
        self.capacity_note = ""
        self.interrupted = False
        self.first_miss: str | None = None  # consolidation: the first count that missed QoS
        self.memory_note = consolidation_memory(cfg)[1]  # said before the sweep starts

    def placement_failed(self, phase: PhaseConfig, exc: Exception) -> bool:
        """Consolidation: a count past the profile's capacity ends the sweep there (True: drop it and the rest)."""
        if self.kind == RunKind.CONSOLIDATION and phase.label.split("/")[-1] not in ("n1", ML, CAD):
            self.capacity_note = f"stopped at {phase.label}: {exc}"
            return True
        return False

    def keep_going(self, label: str, outcome: ScenarioOutcome) -> bool:
        self.numbers.setdefault(label, []).append(numbers(outcome))
        if self.kind != RunKind.CONSOLIDATION or label.endswith((f"/{ML}", f"/{CAD}")):  # baselines: not judged
            return True
        if len(self.numbers[label]) < self.cfg.scenario.phase_repeats:
            return True  # a count is judged once all its repeats are in (they run in a row)
        alone = next((v for k, v in self.numbers.items() if k.endswith(f"/{ML}")), None)
        s = self.settings
        self.verdicts[label] = count_qos(self.numbers[label], alone, s.qos_p95_frame_ms, s.qos_ml_slowdown_pct,
                                        self.cfg.host_busy_pct)
        if not self.verdicts[label][0] and self.first_miss is None:
            self.first_miss = label
        return self.counts_past_miss() < self.settings.counts_past_miss or self.first_miss is None

    def counts_past_miss(self) -> int:
        """Consolidation counts measured after the first that missed QoS."""
        if self.first_miss is None:
            return 0
        labels = [label for label in self.verdicts]
        return len(labels) - 1 - labels.index(self.first_miss)

    def results(self) -> dict[str, float]:
        """The comparison run's derived metrics (what the report recomputes from the phase runs)."""
        if self.kind == RunKind.MIXED:
            return by_profile(self.numbers)
        return consolidation_metrics(self.numbers, self.settings.qos_p95_frame_ms,
                                     self.settings.qos_ml_slowdown_pct, self.cfg.host_busy_pct)

    def score_marks(self) -> list[marks.Mark]:
        """What marks the scores built on these phases (every repeat's)."""
        return marks.of_repeats(self.numbers, self.cfg.host_busy_pct, self.cfg.scale)

    def params(self) -> JsonObject:
        s = self.settings
        out = {"kind": self.kind, "profiles": ",".join(mixed_profiles(self.cfg)), "cad_workload": s.cad.workload,
               "ml_workload": s.ml.workload, "qos_p95_frame_ms": s.qos_p95_frame_ms,
               "qos_ml_slowdown_pct": s.qos_ml_slowdown_pct, "qos_cad_slowdown_pct": s.qos_cad_slowdown_pct,
               "host_busy_pct": self.cfg.host_busy_pct, "scale": self.cfg.scale,
               "capacity_note": self.capacity_note or "-"}
        out.update({f"reference.{p}": s.reference[p] for p in mixed_profiles(self.cfg) if p in s.reference})
        if self.kind == RunKind.CONSOLIDATION:
            out["stop_reason"] = self.stop_reason()
        return out

    def stop_reason(self) -> str:
        """Why a consolidation sweep ended where it did."""
        if self.interrupted:
            return "interrupted"
        missed = [(label, why) for label, (ok, why) in self.verdicts.items() if not ok]
        if missed:
            past = self.counts_past_miss()
            return f"{miss_words(missed[0][1])} at {missed[0][0].split('/')[-1]}: {missed[0][1]}" + (
                f"; {past} count(s) measured past it" if past else "")
        if self.capacity_note:
            return f"{placement_limit(self.capacity_note)}: {self.capacity_note}"
        if self.settings.counts:
            return f"the last count reached ({self.settings.counts[-1]}; counts {list(self.settings.counts)}), " \
                   "every count met QoS"
        return f"max_guests reached ({self.settings.max_guests}), every count met QoS"


def placement_limit(message: str) -> str:
    """Which limit a placement error names: what stopped a consolidation that still met QoS."""
    for needle, limit in (("host memory", "host memory"), ("vCPUs", "host vCPUs"), ("Ray cluster", "cluster"),
                          ("passthrough GPU", "host GPUs"), ("capacity", "profile capacity")):
        if needle in message:
            return limit
    return "placement"


CONSOLIDATE, DOES_NOT_MEET = "consolidate", "does not meet"


def mixed_verdict(profile: str, figures: dict[str, float], cad_pct: float, ml_pct: float,
                  busy_pct: float = math.inf) -> tuple[str, str]:
    """(verdict, one sentence) per profile: the slowdowns and the concurrent/sequential ratio with their intervals,
    judged against the reference's rule (CAD <= cad_pct, ML <= ml_pct, concurrent beats sequential).

    ``consolidate`` where every interval lies within its limit, ``does not meet`` where one lies wholly beyond it,
    ``inconclusive (...)`` where one straddles its limit or there is no interval (n < 2): a verdict the interval
    cannot carry is not given; nor one from a host that other processes kept busy (over ``busy_pct`` % of a core).
    """
    n = int(figures.get("ml_train_time_increase_pct.n", 1) or 1)
    parts = (("CAD", "cad_run_time_increase_pct", 1 + cad_pct / 100), ("ML", "ml_train_time_increase_pct",
             1 + ml_pct / 100), ("concurrent/sequential", "concurrent_vs_sequential", 1.0))
    judged = [(name, judge_limit(figure_interval(figures, key, n), limit), figure_interval(figures, key, n))
              for name, key, limit in parts]
    other = figures.get(vocab.HOST_OTHER_CPU.key, math.nan)
    if figures.get(FAILED, 0.0) > 0:  # e.g. the CAD guest killed mid-run: the ML guest then trained partly alone
        said = f"inconclusive ({figures[FAILED]:.0f} guest(s) failed: the phases are not the guests' together)"
    elif overlap_shortfall(figures.get(vocab.OVERLAP.key, math.nan)):
        said = overlap_shortfall(figures[vocab.OVERLAP.key])
    elif other > busy_pct:
        said = f"inconclusive (host busy: other processes {other:.0f} % of a core > host_busy_pct={busy_pct:g})"
    elif any(j == "misses" for _, j, _ in judged):
        said = DOES_NOT_MEET
    elif all(j == "meets" for _, j, _ in judged):
        said = CONSOLIDATE
    else:
        name, _, iv = next(x for x in judged if x[1] != "meets")
        said = inconclusive(iv, 5.0, f"{name} straddles its limit" if iv.spread else "")
    texts = [f"{name} {pct_text(figures, key)}" for name, key, _ in parts[:2]]
    ratio = figures.get("concurrent_vs_sequential", math.nan)
    lo, hi = (figures.get(f"concurrent_vs_sequential.{b}", math.nan) for b in ("ci_low", "ci_high"))
    spread = f" [{lo:.2f}, {hi:.2f}]" if lo == lo and hi == hi else ""
    return said, (f"{profile}: {texts[0]}, {texts[1]} when sharing; concurrent/sequential {ratio:.2f}{spread} "
                  f"(median of {n} per-repeat ratio{'s' if n != 1 else ''}) — {said} (rule: CAD ≤ {cad_pct:g} %, "
                  f"ML ≤ {ml_pct:g} %, concurrent < sequential, each 95 % CI)")


def pct_text(figures: dict[str, float], key: str) -> str:
    v, lo, hi = (figures.get(k, math.nan) for k in (key, f"{key}.ci_low", f"{key}.ci_high"))
    if v != v:
        return "not measured"
    return f"{v:+.1f} %" + (f" [{lo:+.1f}, {hi:+.1f}]" if lo == lo and hi == hi else "")


def figure_interval(figures: dict[str, float], key: str, n: int) -> Interval:
    """A recorded headline figure's interval as a ratio (a slowdown of x % as 1 + x/100), for judging."""
    scale = (lambda v: 1 + v / 100) if key.endswith("_pct") else (lambda v: v)  # noqa: E731
    v, lo, hi = (scale(figures.get(k, math.nan)) for k in (key, f"{key}.ci_low", f"{key}.ci_high"))
    return Interval(n, v, v, lo, hi, 0.95, "recorded")


# The mixed scenario's headline figures get a confidence interval over the repeats (``<figure>.ci_low/.ci_high``),
# on the log scale of the ratio each is (a slowdown of +x % is the ratio 1 + x/100): an interval never reaches -100 %.
WITH_SPREAD = ("cad_run_time_increase_pct", "ml_train_time_increase_pct", "concurrent_vs_sequential")


def by_profile(numbers: dict[str, list[PhaseNumbers]]) -> dict[str, float]:
    """Per profile: each figure derived per repeat (repeat i of cad, mixed and ml together), then its median; the
    headline figures also their 95 % interval and n."""
    profiles_seen = dict.fromkeys(label.split("/")[0] for label in numbers)
    out: dict[str, float] = {}
    for p in profiles_seen:
        phases = {label.split("/")[1]: runs for label, runs in numbers.items() if label.startswith(f"{p}/")}
        repeats = min(len(runs) for runs in phases.values())
        per_repeat = [derive({kind: runs[i] for kind, runs in phases.items()}) for i in range(repeats)]
        for key in per_repeat[0]:
            values = [d[key] for d in per_repeat]
            finite = [v for v in values if v == v]
            out[f"{p}.{key}"] = statistics.median(finite) if finite else math.nan
            if key in (vocab.HOST_OTHER_CPU.key, FAILED):  # the busiest phase / any failure of any repeat
                out[f"{p}.{key}"] = max(finite, default=math.nan)
            elif key == vocab.OVERLAP.key:  # the least overlapped repeat says whether the slowdowns are verdicts
                out[f"{p}.{key}"] = min(finite, default=math.nan)
            elif key in WITH_SPREAD:
                pct = key.endswith("_pct")
                iv = ratio_interval(1 + v / 100 if pct else v for v in values)
                back = (lambda r: (r - 1) * 100) if pct else (lambda r: r)  # noqa: E731
                out.update({f"{p}.{key}.ci_low": back(iv.low), f"{p}.{key}.ci_high": back(iv.high),
                            f"{p}.{key}.n": float(iv.n)})
    return out


def consolidation_metrics(numbers: dict[str, list[PhaseNumbers]], p95_ms: float, ml_pct: float,
                          busy_pct: float = math.inf) -> dict[str, float]:
    """Per count its figures (medians over its repeats) and verdict (every repeat's: :func:`count_qos`); the score
    (guests_at_qos) and whether it is one (``inconclusive``: a mark that voids it, :mod:`suites.run.marks`)."""
    alone = next((v for k, v in numbers.items() if k.endswith(f"/{ML}")), None)
    out: dict[str, float] = {"guests_at_qos": 0.0, "qos_p95_frame_ms": p95_ms, "qos_ml_slowdown_pct": ml_pct,
                             "inconclusive": float(marks.inconclusive(marks.of_repeats(numbers, busy_pct)))}
    for label, runs in numbers.items():
        if label.endswith((f"/{ML}", f"/{CAD}")):
            continue
        count = int(label.split("/n")[-1])
        ok, why = count_qos(runs, alone, p95_ms, ml_pct, busy_pct)
        out[f"n{count}.inconclusive"] = float(why.startswith("inconclusive"))
        out[f"n{count}.p95_frame_ms_worst"] = summarize(max(n.cad_p95_frame_ms, default=math.nan) for n in runs).median
        out[f"n{count}.ml_slowdown_pct"] = summarize(ml_slowdown_pct(n, paired(alone, i)) for i, n in enumerate(runs)
                                                     if alone).median
        out[f"n{count}.{vocab.OVERLAP.key}"] = min((n.overlap_pct for n in runs), default=math.nan)
        out[f"n{count}.meets_qos"] = float(ok)
        out[f"n{count}.failed"] = float(sum(n.failed for n in runs))  # not measured whole: no verdict
        out[f"n{count}.host_cpu_pct"] = summarize(n.host_cpu_pct for n in runs).median
        out[f"n{count}.repeats"] = float(len(runs))
        if ok and count == out["guests_at_qos"] + 1:  # the largest count with every count before it passing
            out["guests_at_qos"] = float(count)
    return out
