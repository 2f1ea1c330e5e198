"""Users per GPU and per host for every candidate profile, per CAD user type and QoS level: the shape of NVIDIA's
vWS sizing tables and nVector's density, each cell labelled with what it rests on.

- ``measured``: the profile's consolidation curve, read at the level's limits (the GPU time, or a fixed resource
  that binds first: framebuffer, host CPU, host memory);
- ``predicted``: GPU time binds at a count interpolated between two measured counts (curve.py);
- ``framebuffer bound only``: not measured: the profile's own ceiling (how many fit the card, and the host where it
  is described), shown as ``<= N``: an upper bound, never a capacity;
- ``not measured``: not even that (no CAD guest fits beside the ML guest's);
- ``inconclusive``: measured, but on a busy host, at smoke sizes, ... (noise.py): no figure.

A cell never exceeds the profile's VMs per GPU (the framebuffer's limit is in every cell). Pure.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from suites.capacity.curve import Capacity
from suites.capacity.solver import Candidate, Host, Mix, Prices, size, span

__all__ = ["FB_ONLY", "INCONCLUSIVE", "MEASURED", "NOT_MEASURED", "PREDICTED", "Cell", "cell", "rows", "shown"]

MEASURED, PREDICTED, FB_ONLY, NOT_MEASURED, INCONCLUSIVE = (
    "measured", "predicted", "framebuffer bound only", "not measured", "inconclusive")


@dataclass(frozen=True)
class Cell:
    per_gpu: tuple[int, int] | None  # CAD users per GPU (point, safe); None: no figure
    per_host: tuple[int, int] | None
    label: str
    binds: str = ""  # the resource that binds at the safe end ('' where no figure)


def cell(c: Candidate, cap: Capacity | None, host: Host, with_ml: bool) -> Cell:
    """One profile's density at one level: ``cap`` its curve read at that level's limits (None: not measured)."""
    if c.inconclusive:
        return Cell(None, None, INCONCLUSIVE)
    # the solver's own reading of one candidate (its layout: the ML guest beside the CAD guests, or on a GPU of its
    # own where none fits beside it), for one CAD user at this level's curve
    s = size(replace(c, capacity=cap), Mix(1, 1 if with_ml else 0), host, 0, Prices())
    per_host = (s.per_gpu[0] * host.gpus, s.per_gpu[1] * host.gpus)
    if cap is None:
        if s.per_gpu[0] <= 0:
            return Cell(None, None, NOT_MEASURED)
        return Cell(s.per_gpu, per_host, FB_ONLY, min(s.limits, key=lambda k: s.limits[k][0]))
    return Cell(s.per_gpu, per_host, PREDICTED if any(s.predicted) else MEASURED, s.binding[1])


def rows(candidates: list[Candidate], caps: dict[tuple[str, str], dict[str, Capacity]], host: Host,
         with_ml: bool) -> list[tuple[str, str, Candidate, Cell]]:
    """(user type, QoS level, candidate, its cell) for every type and level of ``caps`` ((type, level) -> profile
    -> curve) and every candidate, in that order."""
    out = []
    for (user_type, level), by_profile in caps.items():
        for c in candidates:
            out.append((user_type, level, c, cell(c, by_profile.get(c.profile), host, with_ml)))
    return out


def shown(cell_: Cell) -> tuple[str, str]:
    """(per GPU, per host) as 'safe..point' text: '<= N' for a framebuffer bound, '-' where there is no figure."""
    if cell_.per_gpu is None or cell_.per_host is None:
        return "-", "-"
    if cell_.label == FB_ONLY:
        return f"<= {cell_.per_gpu[0]}", f"<= {cell_.per_host[0]}"
    return span(cell_.per_gpu), span(cell_.per_host)

