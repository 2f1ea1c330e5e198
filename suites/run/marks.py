"""What marks a score built on phases: a figure is only as good as the runs under it.

A consolidation's ``N CAD guests at QoS`` or a mixed profile's verdict stands on every phase it read. Where one
of them ran on a busy host, measured its ML guest without a rate (a window too short), missed its accuracy
target, or was a ``+preset=smoke`` check, the score says so wherever it is shown: the console headline and table,
report.md/HTML, and the MLflow run's tags and metrics. A mark that ``voids`` the score makes it ``inconclusive``
(a busy host's load is in every figure; a slowdown from a blank rate was never measured); the others are said
beside it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Protocol

from suites import store_keys as keys

__all__ = ["Mark", "inconclusive", "marks_of", "of_repeats", "tags_of", "text_of"]

SMOKE = "smoke"


class Phase(Protocol):
    host_other_cpu_pct: float
    ml_rate_blank: int
    ml_missed: str


@dataclass(frozen=True)
class Mark:
    text: str
    voids: bool  # the score is no verdict (inconclusive), not only marked


def marks_of(phases: dict[str, Phase], busy_pct: float = math.inf, scale: str = "full") -> list[Mark]:
    """The marks of a score built on ``phases`` (label -> its numbers), in the order they matter."""
    out: list[Mark] = []
    busy = {label: p.host_other_cpu_pct for label, p in phases.items() if p.host_other_cpu_pct > busy_pct}
    if busy:
        out.append(Mark(f"host busy in {len(busy)} of {len(phases)} phase(s) (other processes up to "
                        f"{max(busy.values()):.0f} % of a core > host_busy_pct={busy_pct:g})", True))
    blank = [label for label, p in phases.items() if p.ml_rate_blank]
    if blank:
        out.append(Mark(f"ML rate blank in {', '.join(blank)} (a timed window too short for a rate): its "
                        "slowdown is not measured", True))
    missed = {label: p.ml_missed for label, p in phases.items() if p.ml_missed}
    if missed:
        label, why = next(iter(missed.items()))
        out.append(Mark(f"ML guest missed its target in {len(missed)} phase(s) ({label}: {why})", False))
    if scale == SMOKE:
        out.append(Mark("+preset=smoke: a seconds-long check of the machinery, not a measurement", False))
    return out


def of_repeats(phases: dict[str, list[Phase]], busy_pct: float = math.inf, scale: str = "full") -> list[Mark]:
    """:func:`marks_of` every repeat of each phase (label -> its repeats, ``<label> r<i>`` where there are several):
    what the runner and the report read back both judge."""
    flat = {label + (f" r{i + 1}" if len(runs) > 1 else ""): p for label, runs in phases.items()
            for i, p in enumerate(runs)}
    return marks_of(flat, busy_pct, scale)


def inconclusive(marks: list[Mark]) -> bool:
    return any(m.voids for m in marks)


def text_of(marks: list[Mark]) -> str:
    """'inconclusive: <why>; marked: <what>' ('' for none): what follows a score wherever it is shown."""
    void = [m.text for m in marks if m.voids]
    said = [m.text for m in marks if not m.voids]
    return "; ".join(([f"inconclusive: {'; '.join(void)}"] if void else []) +
                     ([f"marked: {'; '.join(said)}"] if said else []))


def tags_of(marks: list[Mark]) -> dict[str, str]:
    """The MLflow tags a marked score's run carries: ``bench.inconclusive``, ``bench.host_busy``, ``bench.marks``."""
    tags = {keys.MARKS: text_of(marks)} if marks else {}
    if inconclusive(marks):
        tags[keys.INCONCLUSIVE] = "; ".join(m.text for m in marks if m.voids)
    busy = next((m.text for m in marks if m.text.startswith("host busy")), "")
    if busy:
        tags[keys.HOST_BUSY] = busy
    return tags
