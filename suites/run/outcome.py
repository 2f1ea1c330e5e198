"""What a scenario run produced, as plain data: what recording and rendering read (no live objects)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from gpu_probe import vocab
from gpu_probe.hostload import HostLoad
from gpu_probe.inventory import Inventory
from gpu_probe.sampler import SampleSet
from gpu_probe.shapes import JsonObject
from gpu_probe.stats import covered_fraction
from suites.backends.placement import Placement
from suites.guest.protocol import GuestResult, GuestSpec
from suites.validity import ENFORCED, NOT_ENFORCED, first_reason, labelled, weakest

EXIT_PARTIAL = 1
EXIT_INTERRUPTED = 130


@dataclass
class GuestOutcome:
    spec: GuestSpec
    placement: Placement
    result: GuestResult
    log_path: Path
    sampled: dict[str, float] = field(default_factory=dict)  # sampler aggregates for this guest
    validity: str = ENFORCED  # the placement's, unless the guest reports it ran on less (see measured_validity)

    @property
    def validity_reason(self) -> str:
        """The placement's reason, while the guest is worth what it was placed as (see measured_validity)."""
        return self.placement.reason if self.validity == self.placement.validity else ""


@dataclass
class ScenarioOutcome:
    status: str  # ok | partial | failed | interrupted
    guests: list[GuestOutcome]
    makespan_s: float | None
    reasons: list[str]
    inventory: Inventory
    data: JsonObject
    samples: SampleSet
    host_metrics: dict[str, float] = field(default_factory=dict)  # host/GPU aggregates, sampler rate, energy
    started_at: float = 0.0  # epoch seconds: guests being started ...
    ended_at: float = 0.0  # ... and all of them stopped
    released_at: float = 0.0  # the start barrier released them (0: never)
    results_at: float = 0.0  # every guest's result in (0: not all)
    host_busy: str = ""  # "host busy (other processes: X % of a core)" where the host was, else ""

    @property
    def exit_code(self) -> int:
        return {"ok": 0, "interrupted": EXIT_INTERRUPTED}.get(self.status, EXIT_PARTIAL)

    @property
    def ok_guests(self) -> list[GuestOutcome]:
        return [o for o in self.guests if o.result.ok]

    @property
    def validity(self) -> str:
        """What the run's figures are worth: its weakest guest's."""
        return weakest([o.validity for o in self.guests])

    @property
    def validity_reason(self) -> str:
        """Why the run is worth what it is, where that is not the usual reason (a TCG VM's guests)."""
        return first_reason(o.validity_reason for o in self.guests if o.validity == self.validity)

    @property
    def validity_label(self) -> str:
        return labelled(self.validity, self.validity_reason)


def overlaps(guests: list[GuestOutcome]) -> dict[str, float]:
    """How far the guests' figures were measured beside each other, in %. Per concurrent pair
    (``overlap_pct.<a>.<b>``): the share of each one's timed window (first window's start to last one's end) during
    which the other was at work (its training or replay, warm-up included), the smaller of the two. The run's
    ``overlap_pct``: the worst guest's share of its window during which a guest of another workload was at work
    (any guest where all run one workload), what a slowdown beside the others needs. {} under two such guests."""
    spans = {o.spec.guest_id: (o.spec.workload, (o.result.windows[0][0], o.result.windows[-1][1]),
                               (o.result.t_train_start, o.result.t_train_end)) for o in guests
             if o.result.ok and o.result.windows and None not in (o.result.t_train_start, o.result.t_train_end)}
    ids = sorted(spans)
    if len(ids) < 2:
        return {}
    out = {f"{vocab.OVERLAP.key}.{a}.{b}": 100 * min(covered_fraction(spans[a][1], spans[b][2]),
                                                       covered_fraction(spans[b][1], spans[a][2]))
           for i, a in enumerate(ids) for b in ids[i + 1:]}
    mixed = len({w for w, _, _ in spans.values()}) > 1

    def beside(gid: str) -> float:
        others = [active for other, (w, _, active) in spans.items()
                  if other != gid and (not mixed or w != spans[gid][0])]
        return 100 * covered_fraction(spans[gid][1], *others)

    return {**out, vocab.OVERLAP.key: min(beside(g) for g in ids)}


def busy_worst(before: HostLoad | None, during_pct: float) -> float:
    """Other processes' CPU (% of one core) that says whether the host was busy: the worse of the look before the
    run and the mean during it (what the phase says, and what every score built on it reads: ``.worst``)."""
    return max(before.other_pct if before else 0.0, during_pct if during_pct == during_pct else 0.0)


def busy_text(before: HostLoad | None, during_pct: float, threshold_pct: float) -> str:
    """``host busy (other processes: X % of a core)`` where other processes used more than ``threshold_pct`` of a
    core before the run (``before``) or on average during it, else ''."""
    worst = busy_worst(before, during_pct)
    if worst <= threshold_pct:
        return ""
    steal = before.steal_pct if before else 0.0
    return f"host busy (other processes: {worst:.0f} % of a core" + (
        f", steal {steal:.0f} %" if steal >= 1 else "") + f"; > host_busy_pct={threshold_pct:g})"


def busy_check_on(threshold_pct: float) -> bool:
    """host_busy_pct at or above 100 x the host's cores can never be exceeded: no look before the run."""
    return threshold_pct < 100.0 * (os.cpu_count() or 1)


def percent(fraction: float) -> str:
    """0.99 -> '99%', 0.9925 -> '99.25%'."""
    return f"{fraction:.0%}" if round(fraction * 100, 6) == round(fraction * 100) else f"{fraction:.2%}"


def missed_target(metrics: dict[str, float]) -> str:
    """Why a guest's accuracy missed its workload's target ('' when it met it or has none). Over repeats the worst
    repeat counts: one that missed is a miss."""
    if "target_accuracy" not in metrics or metrics.get("target_met.min", metrics.get("target_met", 1.0)) >= 1.0:
        return ""
    acc = metrics.get("test_accuracy.min", metrics.get("test_accuracy", float("nan")))
    return f"test accuracy {percent(acc) if acc == acc else '?'} < target {percent(metrics['target_accuracy'])}"


def measured_validity(placement: Placement, result: GuestResult) -> str:
    """The placement's validity, unless the guest says it did not get its GPU: trained on the CPU, or rendered
    with a software renderer although it had a GPU."""
    if placement.validity == NOT_ENFORCED or not placement.gpus:
        return placement.validity
    if result.info.get("device") == "cpu" or result.info.get("renderer_note"):
        return NOT_ENFORCED
    return placement.validity
