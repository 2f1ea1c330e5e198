"""A mix of CAD users and ML users taken to a profile, guests per GPU, GPUs, hosts and a cost per user.

Each candidate profile of the target GPU is held to what binds it, per GPU, for CAD guests beside one ML guest
(the shape the consolidation curve measured):

- **framebuffer**: how many of the profile fit the card (its ``max_per_gpu``), less the ML guest's slot;
- **GPU time**: the curve's capacity, ``n_point`` (medians) to ``n_safe`` (upper 95 % bounds) (curve.py);
- **host CPU**: the host's cores (times its overcommit) over the profile's vCPUs, shared by the host's GPUs;
- **host memory**: the host's memory over the profile's memory, likewise.

A profile whose framebuffer cannot hold a workload's measured peak (CUDA context included, plus the profile's
own reserve) is not a candidate, and says so. The recommendation is the candidate that needs the fewest GPUs (at
``n_safe`` where every candidate has one, else at ``n_point``), ties broken by the margin to QoS at that count.
Every figure comes as a range: ``n_safe`` gives the upper end of GPUs and cost, ``n_point`` the lower. Pure.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from suites.capacity.curve import Capacity
from suites.validity import ENFORCED

__all__ = ["Answer", "Candidate", "Demand", "Host", "Mix", "Prices", "Sized", "cost_per_user", "solve", "span"]

FRAMEBUFFER, GPU_TIME, HOST_CPU, HOST_MEMORY = "framebuffer", "GPU time", "host CPU", "host memory"
NOT_MEASURED = "GPU time not measured"
INCONCLUSIVE = "inconclusive"


@dataclass(frozen=True)
class Mix:
    cad: int  # CAD users (one guest each)
    ml: int  # ML training jobs (one guest each)

    @property
    def users(self) -> int:
        return self.cad + self.ml


@dataclass(frozen=True)
class Demand:
    """What one guest of each category was measured to need on its GPU (MiB, CUDA context included)."""

    cad_peak_MiB: float
    ml_peak_MiB: float
    reserve_MiB: float = 0.0  # what a profile's framebuffer keeps for itself (display, the guest driver)


@dataclass(frozen=True)
class Host:
    gpus: int  # GPUs per host
    cores: int | None  # None: not a limit (the target host not described)
    memory_MiB: int | None
    cpu_overcommit: float = 1.0  # vCPUs per core the hypervisor is allowed


@dataclass(frozen=True)
class Prices:
    gpu: float | None = None  # one GPU (or one GPU's share of its board)
    licence_per_year: float | None = None  # per concurrent user (guest), as NVIDIA's vGPU editions are sold
    years: float = 3.0


@dataclass(frozen=True)
class Candidate:
    profile: str
    gpu: str  # the GPU model it slices
    framebuffer_MiB: int
    per_gpu: int  # how many fit one card
    vcpus: int
    memory_MiB: int
    capacity: Capacity | None  # CAD guests per GPU beside one ML guest, measured; None where not measured
    validity: str = ENFORCED
    inconclusive: str = ""  # why its curve carries no count (suites/capacity/noise.py): '' where it does


@dataclass
class Sized:
    """One candidate sized for the mix (``gpus`` etc. as (at n_point, at n_safe); None where it cannot serve)."""

    profile: str
    limits: dict[str, tuple[int, int]]  # resource -> CAD guests per GPU it allows (point, safe)
    binding: tuple[str, str]  # the resource that binds at (point, safe)
    per_gpu: tuple[int, int]
    gpus: tuple[int | None, int | None]
    hosts: tuple[int | None, int | None]
    cost: tuple[float | None, float | None]
    margin: float  # 1 - the load at the point count (how far under its QoS limits the chosen count ran)
    reasons: list[str] = field(default_factory=list)
    validity: str = ENFORCED
    # (point, safe): that end's figures rest on a count the curve interpolated (GPU time binds at a count between
    # two measured counts): labelled predicted wherever shown
    predicted: tuple[bool, bool] = (False, False)
    ml_shared: bool = True  # the ML guests beside the CAD guests (one per GPU); False: on GPUs of their own


@dataclass
class Answer:
    recommended: Sized | None
    sized: list[Sized]
    excluded: list[str]  # why each profile that is no candidate is not
    error: str = ""  # the one line of a mix no profile can serve
    inconclusive: str = ""  # 'inconclusive: <why>; to size: <what to do>': no count is given from noise


def span(pair: tuple[int | float | None, int | float | None], pattern: str = "{}") -> str:
    """A (point, safe) pair as 'safe..point' (one figure where they agree, '-' for an end with none)."""
    point, safe = (pattern.format(v) if v is not None else "-" for v in pair)
    return point if point == safe else f"{safe}..{point}"


def cost_per_user(gpus: int | None, users: int, prices: Prices) -> float | None:
    """(GPUs x the GPU's price + users x the licence per year x years) / users; None without prices or GPUs."""
    if gpus is None or users <= 0 or (prices.gpu is None and prices.licence_per_year is None):
        return None
    total = gpus * (prices.gpu or 0.0) + users * (prices.licence_per_year or 0.0) * prices.years
    return total / users


def gpus_for(mix: Mix, cad_per_gpu: int, spare: int, shared: bool = True) -> int | None:
    """``shared``: one ML guest per GPU at most beside ``cad_per_gpu`` CAD guests (the curve's shape); else the ML
    guests on GPUs of their own. Plus ``spare``; None where no GPU holds a CAD guest."""
    if mix.cad and cad_per_gpu <= 0:
        return None
    cad = math.ceil(mix.cad / cad_per_gpu) if mix.cad else 0
    return (max(mix.ml, cad) if shared else mix.ml + cad) + spare


def fits(c: Candidate, mix: Mix, demand: Demand) -> str:
    """Why ``c`` cannot hold a guest of the mix ('' where it can)."""
    usable = c.framebuffer_MiB - demand.reserve_MiB
    for category, count, peak in (("ml", mix.ml, demand.ml_peak_MiB), ("cad", mix.cad, demand.cad_peak_MiB)):
        if count and peak > usable:
            less = f" less its reserve {demand.reserve_MiB:,.0f} MiB" if demand.reserve_MiB else ""
            return f"{category} needs {peak:,.0f} MiB > {c.profile}'s framebuffer {c.framebuffer_MiB:,} MiB{less}"
    return ""


def limits_of(c: Candidate, host: Host, ml_slot: int) -> dict[str, tuple[int, int]]:
    """CAD guests per GPU each resource allows (point, safe), beside ``ml_slot`` ML guests."""
    fixed = {FRAMEBUFFER: c.per_gpu - ml_slot}
    if host.cores is not None:
        fixed[HOST_CPU] = int(host.cores * host.cpu_overcommit // c.vcpus) // host.gpus - ml_slot
    if host.memory_MiB is not None:
        fixed[HOST_MEMORY] = host.memory_MiB // c.memory_MiB // host.gpus - ml_slot
    limits = {k: (v, v) for k, v in fixed.items()}
    if c.capacity is not None:
        limits[GPU_TIME] = c.capacity.gpu_time
    return limits


def size(c: Candidate, mix: Mix, host: Host, spare: int, prices: Prices) -> Sized:
    cap = None if c.inconclusive else c.capacity
    limits = limits_of(c, host, 1 if mix.ml else 0)
    shared = True
    if mix.ml and mix.cad and min(v[0] for v in limits.values()) <= 0:  # no CAD guest beside an ML one fits:
        limits, shared = limits_of(c, host, 0), False  # the ML guests on GPUs of their own
    point = min(limits.items(), key=lambda kv: kv[1][0])
    safe = min(limits.items(), key=lambda kv: kv[1][1])
    per_gpu = (max(point[1][0], 0), max(safe[1][1], 0))
    # GPU time not measured: no count is given for it (a profile not measured is never shown as measured)
    gpus = tuple(gpus_for(mix, n, spare, shared) if cap is not None else None for n in per_gpu)
    binding = (point[0], safe[0]) if cap is not None else (INCONCLUSIVE if c.inconclusive else NOT_MEASURED,) * 2
    hosts = tuple(math.ceil(g / host.gpus) if g is not None else None for g in gpus)
    at = next((r for r in (cap.readings if cap else []) if r.guests == per_gpu[0]), None)
    margin = 1 - at.load if at is not None and at.load == at.load else 0.0
    s = Sized(c.profile, limits, binding, per_gpu, gpus, hosts,  # type: ignore[arg-type]
              tuple(cost_per_user(g, mix.users, prices) for g in gpus), margin, validity=c.validity)  # type: ignore[arg-type]
    if cap is not None:
        s.predicted = (binding[0] == GPU_TIME and cap.predicted[0] is not None,
                       binding[1] == GPU_TIME and cap.predicted[1] is not None)
    s.reasons = reasons(c, s, cap)
    if c.inconclusive:
        s.reasons[1] = f"{GPU_TIME}: {c.inconclusive}"
    s.ml_shared = shared
    if not shared:
        s.reasons.insert(0, f"layout: the ML guests on GPUs of their own (no CAD guest fits beside one on "
                            f"{c.profile}: {c.per_gpu} per GPU)")
    return s


def reasons(c: Candidate, s: Sized, cap: Capacity | None) -> list[str]:
    """One line per resource: what it allows per GPU, and the binding one's why."""
    out = [f"{FRAMEBUFFER}: {c.per_gpu} x {c.framebuffer_MiB:,} MiB fit one {c.gpu}"
           + (" (one of them the ML guest's)" if s.limits[FRAMEBUFFER][0] < c.per_gpu else "")]
    if cap is None:
        out.append(f"{GPU_TIME}: not measured for {c.profile}: no consolidation curve")
    else:
        out.append(f"{GPU_TIME}: {cap.n_safe}..{cap.n_point} CAD guest(s) per GPU meet QoS (safe..point); point "
                   f"ends at {cap.why_point}; safe ends at {cap.why_safe}")
        for end, n, was in (("safe", cap.predicted[1], cap.n_safe), ("point", cap.predicted[0], cap.n_point)):
            if n is not None:
                out.append(f"{GPU_TIME}: {n} ({end}) predicted: interpolated between the measured counts "
                           f"{was or 'none'} and {next(r.guests for r in cap.readings if r.guests > was)}, not "
                           "measured")
    for name, what in ((HOST_CPU, f"vCPUs ({c.vcpus} each)"), (HOST_MEMORY, f"memory ({c.memory_MiB:,} MiB each)")):
        out.append(f"{name}: {s.limits[name][0]} CAD guest(s) per GPU by {what}" if name in s.limits else
                   f"{name}: not a limit (the host is not described: sizing.host)")
    out.append(f"binds: {s.binding[1]} (safe), {s.binding[0]} (point)")
    return out


def solve(candidates: list[Candidate], mix: Mix, demand: Demand, host: Host, spare: int = 0,
          prices: Prices = Prices()) -> Answer:
    """Every candidate sized for ``mix``, the recommendation, and why the others are not candidates."""
    excluded = [f"{c.profile}: {fits(c, mix, demand)}" for c in candidates if fits(c, mix, demand)]
    sized = [size(c, mix, host, spare, prices) for c in candidates if not fits(c, mix, demand)]
    serving = [s for s in sized if s.gpus[0] is not None]
    doubt = next((c.inconclusive for c in candidates if c.inconclusive and not fits(c, mix, demand)), "")
    if doubt:  # a candidate's count is unknown: no comparison of candidates, so no answer (never a count from noise)
        return Answer(None, sized, excluded, doubt, doubt)
    if not serving:
        return Answer(None, sized, excluded, impossible(candidates, mix, demand, sized))
    every_safe = all(s.gpus[1] is not None for s in serving)

    def key(s: Sized) -> tuple[float, float]:
        g = s.gpus[1] if every_safe else s.gpus[0]
        return (g if g is not None else math.inf, -s.margin)

    return Answer(min(serving, key=key), sized, excluded)


def impossible(candidates: list[Candidate], mix: Mix, demand: Demand, sized: list[Sized]) -> str:
    """The one line of a mix no profile serves: the largest profile's reason."""
    if not candidates:
        return "no candidate profile for this GPU"
    largest = max(candidates, key=lambda c: c.framebuffer_MiB)
    why = fits(largest, mix, demand)
    if why:
        return why.replace(f"{largest.profile}'s framebuffer", f"the largest profile's framebuffer on "
                           f"{largest.gpu} ({largest.profile}):")
    measured = [s for s in sized if s.binding[0] != NOT_MEASURED]
    if not measured:
        return "no candidate profile has a measured curve (GPU time not measured for any)"
    caps = {c.profile: c.capacity for c in candidates}

    def why(s: Sized) -> str:  # a 0 from GPU time is a measured count that missed QoS: which, and by what
        cap = caps.get(s.profile)
        return f" (point ends at {cap.why_point})" if s.binding[0] == GPU_TIME and cap is not None else ""

    return "no measured profile serves the mix: " + "; ".join(
        f"{s.profile}: {s.binding[0]} allows {s.limits[s.binding[0]][0]} CAD guest(s) per GPU{why(s)}"
        for s in measured)
