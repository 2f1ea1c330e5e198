"""Users per GPU and per host for every candidate profile, per CAD user type and QoS level: the shape of NVIDIA's
vWS sizing tables and nVector's density, each cell labelled with what it rests on.

- ``measured``: the profile's consolidation curve, read at the level's limits (the GPU time, or a fixed resource
  that binds first: framebuffer, host CPU, host memory);
- ``predicted``: GPU time binds at a count interpolated between two measured counts (curve.py);
- ``framebuffer bound only``: not measured: the profile's own ceiling (how many fit the card, and the host where it
  is described), shown as ``<= N``: an upper bound, never a capacity;
- ``not measured``: not even that (no CAD guest fits beside the ML guest's);
- ``framebuffer too small``: the profile's framebuffer cannot hold a guest of the kind (its measured peak, or without
  a GPU what a CAD guest's viewsets state they need): no figure, whatever else it allows;
- ``inconclusive``: measured, but on a busy host, at smoke sizes, ... (noise.py): no figure.

A cell never exceeds the profile's VMs per GPU (the framebuffer's limit is in every cell). Pure.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from suites.capacity.curve import Capacity
from suites.capacity.solver import Candidate, Demand, Host, Mix, Prices, Sized, fits, size, span

__all__ = ["FB_ONLY", "FB_SHORT", "INCONCLUSIVE", "MEASURED", "NOT_MEASURED", "PREDICTED", "Cell", "cell", "rows",
           "shown"]

MEASURED, PREDICTED, FB_ONLY, NOT_MEASURED, INCONCLUSIVE, FB_SHORT = (
    "measured", "predicted", "framebuffer bound only", "not measured", "inconclusive", "framebuffer too small")


@dataclass(frozen=True)
class Cell:
    per_gpu: tuple[int, int] | None  # CAD users per GPU (point, safe); None: no figure
    per_host: tuple[int, int] | None
    label: str
    binds: str = ""  # the resource that binds at the safe end ('' where no figure)


def cell(c: Candidate, cap: Capacity | None, host: Host, ml: int, demand: Demand | None = None) -> Cell:
    """One profile's density at one level beside ``ml`` ML users: ``cap`` its curve read at that level's limits
    (None: not measured); ``demand``: what a guest needs of a framebuffer (a profile below it has no figure). Per GPU:
    a GPU with an ML guest where there is one; per host: as many GPUs with one as there are ML users (at most
    every GPU), the others all CAD."""
    if demand is not None and fits(c, Mix(1, min(ml, 1)), demand):
        return Cell(None, None, FB_SHORT)
    if c.inconclusive:
        return Cell(None, None, INCONCLUSIVE)
    # the solver's own reading of one candidate (its layout: the ML guest beside the CAD guests, or on a GPU of its
    # own where none fits beside it), for one CAD user at this level's curve
    s = size(replace(c, capacity=cap), Mix(1, min(ml, 1)), host, 0, Prices())
    per_host = host_count(replace(c, capacity=cap), s, host, ml)
    if cap is None:
        if s.per_gpu[0] <= 0:
            return Cell(None, None, NOT_MEASURED)
        return Cell(s.per_gpu, per_host, FB_ONLY, min(s.limits, key=lambda k: s.limits[k][0]))
    return Cell(s.per_gpu, per_host, PREDICTED if any(s.predicted) else MEASURED, s.binding[1])


def host_count(c: Candidate, s: Sized, host: Host, ml: int) -> tuple[int, int]:
    """CAD users per host (point, safe): ``min(ml, GPUs)`` of its GPUs hold an ML guest (beside CAD guests, as
    ``s`` counts them, or alone where none fits beside one), the rest CAD guests only."""
    with_ml = min(ml, host.gpus)
    if not with_ml:
        return s.per_gpu[0] * host.gpus, s.per_gpu[1] * host.gpus
    alone = size(c, Mix(1, 0), host, 0, Prices()).per_gpu
    beside = s.per_gpu if s.ml_shared else (0, 0)
    return tuple(beside[i] * with_ml + alone[i] * (host.gpus - with_ml) for i in range(2))  # type: ignore[return-value]


def rows(candidates: list[Candidate], caps: dict[tuple[str, str], dict[str, Capacity]], host: Host,
         ml: int, demand: Demand | None = None) -> list[tuple[str, str, Candidate, Cell]]:
    """(user type, QoS level, candidate, its cell) for every type and level of ``caps`` ((type, level) -> profile
    -> curve) and every candidate, in that order."""
    out = []
    for (user_type, level), by_profile in caps.items():
        for c in candidates:
            out.append((user_type, level, c, cell(c, by_profile.get(c.profile), host, ml, demand)))
    return out


def shown(cell_: Cell) -> tuple[str, str]:
    """(per GPU, per host) as 'safe..point' text: '<= N' for a framebuffer bound, '-' where there is no figure."""
    if cell_.per_gpu is None or cell_.per_host is None:
        return "-", "-"
    if cell_.label == FB_ONLY:
        return f"<= {cell_.per_gpu[0]}", f"<= {cell_.per_host[0]}"
    return span(cell_.per_gpu), span(cell_.per_host)

