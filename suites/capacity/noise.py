"""Whether a consolidation can carry a capacity: a count read from noise is no count.

A sizing's ``0 CAD guests per GPU`` must mean "a measured count missed QoS on a clean host", never "the host was
busy". A consolidation is *inconclusive* for sizing where any of these holds, each said with what to do:

- another process loaded the host (``bench.host_busy``), or an ML guest measured no rate: its marks void it
  (suites/run/marks.py);
- its guests' timed windows overlapped less than the slowdowns need (a slowdown measured partly alone);
- it ran at smoke sizes (a seconds-long check of the machinery);
- a guest failed in a tile (its count's figures are not the guests' together);
- a count has fewer than two repeats (no interval: no safe count).

``again`` says whether measuring again could clear it (a busy host, a short overlap, a failed guest) or only other
settings can (smoke, repeats): a stored consolidation of the first kind is measured again, one of the second
reused and said. Pure.
"""

from __future__ import annotations

from dataclasses import dataclass

from suites.capacity.curve import GuestCount

__all__ = ["Doubt", "doubts", "text_of"]


@dataclass(frozen=True)
class Doubt:
    why: str
    remedy: str
    again: bool  # measuring again (as it is, on a quiet host) could clear it


def doubts(marks: list[tuple[str, bool]], counts: list[GuestCount], min_overlap: float,
           overlap_floor: float) -> list[Doubt]:
    """``marks``: (text, voids) of the consolidation's phases; ``min_overlap``: its least-overlapped count's overlap
    (%, NaN where not measured); ``overlap_floor``: the overlap a slowdown needs."""
    out = [Doubt(text, "stop what else runs on this host (or raise host_busy_pct) and size again"
                 if text.startswith("host busy") else "size again at sizing.tier=full (longer timed windows)", True)
           for text, voids in marks if voids]
    if min_overlap == min_overlap and min_overlap < overlap_floor:
        out.append(Doubt(f"guests overlapped {min_overlap:.0f} % < {overlap_floor:g} % in a count (its slowdowns "
                         "were measured partly alone)", "size again (where it recurs, this host cannot start a "
                         "count's guests together: fewer, sizing.max_guests, or a larger host)", True))
    if any("+preset=smoke" in text for text, _ in marks):
        out.append(Doubt("smoke sizes (seconds-long workloads: a check of the machinery, not a measurement)",
                         "size at sizing.tier=full", False))
    failed = [(s.guests, g) for s in counts for t in s.tiles for g in t.failed]
    if failed:
        n, guest = failed[0]
        out.append(Doubt(f"a guest failed at {n} CAD guest(s) ({guest}; {len(failed)} failure(s) in all)",
                         "read the failed guest's log in the run directory, fix it and size again", True))
    few = [s.guests for s in counts if len(s.tiles) < 2]
    if few:
        out.append(Doubt(f"{len(counts[0].tiles) if len(few) == len(counts) else 'under 2'} repeat(s) at "
                         f"{', '.join(map(str, few))} CAD guest(s): no interval", "size with sizing.repeats >= 2",
                         False))
    if not counts:
        out.append(Doubt("no count was measured", "size again (and read the run's log)", True))
    return out


def text_of(found: list[Doubt]) -> str:
    """'inconclusive: <why>; ...; <what to do>' ('' where nothing is in doubt)."""
    if not found:
        return ""
    remedies = list(dict.fromkeys(d.remedy for d in found))
    return f"inconclusive: {'; '.join(d.why for d in found)}; to size: {'; '.join(remedies)}"
