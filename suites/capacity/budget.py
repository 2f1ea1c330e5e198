"""A sizing within its time budget (``sizing.budget_s``): what ``make size`` measures, trimmed in a stated order
until its estimate fits, each trim said.

A sizing measures one consolidation per candidate profile and policy: ML alone, one CAD guest alone, then the
CAD guest counts of its sweep beside the ML guest, each phase ``repeats`` times. On one GPU host that was 10
candidates x 2 policies x up to 6 phases x 3 repeats, 40-60 minutes, where a lent GPU's command ends at 10. The
estimate is the number of phase runs times what one phase run costs on this host (the caller's figure: measured
where it can be, see suites/sizing/command.py), a count of k CAD guests on a CPU host taking k + 1 guests' share of
its cores. The trims, in order:

1. counts: each count 1..N becomes the doubling counts 1, 2, 4, ... up to N (a count between two measured counts
   is interpolated, and every figure resting on it is labelled ``(predicted)``);
2. repeats: down to 2, never 1 (one repeat has no interval, so no safe count);
3. policies: the first only (timeslice; MPS is compared where the budget allows);
4. candidates: the last of the list dropped first (the list is largest framebuffer first);
5. counts again: the deepest count of the one candidate left dropped, down to one CAD guest beside the ML guest.

What still does not fit is said (``Fitted.fits`` false): the command refuses it before anything runs, never
"measured all the same". What one phase run costs is per CAD user type (a heavy user's viewsets replay 336 frames, a
light user's 96): ``phase_s`` maps each type ('' for the sizing's cad_size) to its seconds.

Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace

__all__ = ["Fitted", "PhaseSeconds", "Sweep", "cpu_share", "doubling", "fit", "phase_of", "sweep_s", "sweeps_of"]

MIN_REPEATS = 2


@dataclass(frozen=True)
class Sweep:
    """One consolidation to measure: a profile under a policy, over its CAD guest counts."""

    profile: str
    policy: str
    counts: tuple[int, ...]
    user_type: str = ""  # the CAD user type its CAD guests stand for ('': the sizing's cad_size)


@dataclass
class Fitted:
    """What fits: the sweeps, the repeats, the estimate, and each trim made, in words."""

    sweeps: list[Sweep]
    repeats: int
    estimate_s: float
    budget_s: float
    trims: list[str] = field(default_factory=list)

    @property
    def fits(self) -> bool:
        return self.estimate_s <= self.budget_s


def doubling(counts: tuple[int, ...]) -> tuple[int, ...]:
    """1, 2, 4, ... up to the deepest count, the deepest kept."""
    if not counts:
        return counts
    deepest, out, n = max(counts), [], 1
    while n < deepest:
        out.append(n)
        n *= 2
    return (*out, deepest)


PhaseSeconds = float | Mapping[str, float]  # one phase run's seconds, or per CAD user type


def phase_of(phase_s: PhaseSeconds, sweep: Sweep) -> float:
    """What one phase run of ``sweep`` costs: its user type's seconds (a single figure serves every type)."""
    return float(phase_s) if isinstance(phase_s, (int, float)) else float(phase_s[sweep.user_type])


def sweep_s(sweep: Sweep, repeats: int, phase_s: PhaseSeconds, shared: Callable[[int], float]) -> float:
    """Seconds one consolidation takes: ML alone, CAD alone (one guest each), then each count's k CAD guests beside
    the ML guest, ``repeats`` times each; ``shared(k)``: how much longer k + 1 guests take than one (their share of
    a CPU host's cores; 1 on a GPU)."""
    return repeats * phase_of(phase_s, sweep) * (2 + sum(shared(k) for k in sweep.counts))


def total_s(sweeps: list[Sweep], repeats: int, phase_s: PhaseSeconds, shared: Callable[[int], float]) -> float:
    return sum(sweep_s(s, repeats, phase_s, shared) for s in sweeps)


def fit(sweeps: list[Sweep], repeats: int, budget_s: float, phase_s: PhaseSeconds,
        shared: Callable[[int], float] = lambda k: 1.0) -> Fitted:
    """The sweeps and repeats trimmed in order (module docstring) until the estimate is within ``budget_s``; what
    still does not fit with one candidate at one count is said and left unfitted (the caller refuses it)."""
    est = lambda s, r: total_s(s, r, phase_s, shared)  # noqa: E731
    out = Fitted(list(sweeps), repeats, est(sweeps, repeats), budget_s)
    if out.fits or not sweeps:
        return out
    sparse = [replace(s, counts=doubling(s.counts)) for s in out.sweeps]
    if sparse != out.sweeps:
        out.trims.append("counts: the doubling counts " + ", ".join(dict.fromkeys(
            f"{s.profile} {list(s.counts)}" for s in sparse if s.counts))
            + " (between them: interpolated, (predicted))")
        out.sweeps = sparse
    if est(out.sweeps, out.repeats) > budget_s and out.repeats > MIN_REPEATS:
        out.trims.append(f"repeats: {out.repeats} -> {MIN_REPEATS} per count")
        out.repeats = MIN_REPEATS
    first = out.sweeps[0].policy
    if est(out.sweeps, out.repeats) > budget_s and any(s.policy != first for s in out.sweeps):
        dropped = sorted({s.policy for s in out.sweeps if s.policy != first})
        out.sweeps = [s for s in out.sweeps if s.policy == first]
        out.trims.append(f"policies: {first} only ({', '.join(dropped)} not compared)")
    dropped_profiles: list[str] = []
    while est(out.sweeps, out.repeats) > budget_s and len({s.profile for s in out.sweeps}) > 1:
        last = out.sweeps[-1].profile
        dropped_profiles.insert(0, last)
        out.sweeps = [s for s in out.sweeps if s.profile != last]
    if dropped_profiles:
        out.trims.append(f"candidates: {', '.join(dropped_profiles)} not measured")
    shallower(out, est)
    out.estimate_s = est(out.sweeps, out.repeats)
    return out


def shallower(out: Fitted, est: Callable[[list[Sweep], int], float]) -> None:
    """The one candidate's deepest counts dropped until it fits or one CAD guest is left (said)."""
    before = [s.counts for s in out.sweeps]
    while est(out.sweeps, out.repeats) > out.budget_s and any(len(s.counts) > 1 for s in out.sweeps):
        out.sweeps = [replace(s, counts=s.counts[:-1]) if len(s.counts) > 1 else s for s in out.sweeps]
    if [s.counts for s in out.sweeps] != before:
        out.trims.append("counts: " + ", ".join(dict.fromkeys(f"{s.profile} {list(s.counts)}" for s in out.sweeps))
                         + " (deeper counts not measured: past the budget)")


def cpu_share(cores: int) -> Callable[[int], float]:
    """A count of k CAD guests beside the ML guest on a host of ``cores`` CPU cores: k + 1 guests' share of them."""
    return lambda k: max(1.0, (k + 1) / max(1, cores))


def sweeps_of(counts: list[int], deepest: dict[str, int], policies: list[str],
              user_types: list[str] = [""]) -> list[Sweep]:  # noqa: B006 (never mutated)
    """Each profile to its deepest count (the ``counts`` sizing.counts names up to it, else each 1..deepest), under
    each policy, for each CAD user type."""
    out = []
    for name, depth in deepest.items():
        mine = tuple(n for n in counts if n <= depth) or tuple(range(1, depth + 1))
        out += [Sweep(name, policy, mine, t) for policy in policies for t in user_types]
    return out
