"""What ``make size`` measures, planned before anything starts: the GPU sized for, its candidate profiles, and one
consolidation per profile, policy and CAD user type (or a stored one of the same measurement), fitted to
``sizing.budget_s``; a problem is one ConfigError.

A profile is measured only as deep as its VMs per GPU allow beside the ML guest (``m60-2q``: 4 a GPU, so at most 3
CAD guests beside one ML guest); on a host without a GPU one profile's curve stands for none of them, and the one
measured is one whose VMs per GPU allow the counts (said, with why).

Pure: no file, store, clock, cluster or process is touched here (tests/test_layout.py checks its imports); what it
is fed from outside, a fleet's survey, the candidate profiles from configs/profile, a phase run's cost from trial
runs, and each part's composition, is :mod:`suites.sizing.campaign`'s."""

from __future__ import annotations

import json
from typing import NamedTuple

from gpu_probe.inventory import Inventory
from gpu_probe.shapes import JsonObject
from suites.campaign import OVERHEAD_S
from suites.capacity import budget
from suites.capacity.budget import Sweep
from suites.config.compose import Composition
from suites.config.overrides import override
from suites.config.profiles import ProfileConfig
from suites.errors import ConfigError
from suites.sizing import fleet_candidates
from suites.sizing.settings import SizingSettings
from suites.workloads import workload_class
from suites.workloads.graphics.replay import GraphicsReplayConfig
from suites.workloads.graphics.viewsets import FRAMES_PER_TEST, VIEWSETS

__all__ = ["REFERENCE_GPU", "SizingPart", "SizingPlan", "frames_of", "part_overrides", "reuse_key", "what_to_measure"]

REFERENCE_GPU = "Tesla M60"  # the reference study's, where neither sizing.gpu nor this host names one


def part_overrides(settings: SizingSettings, sweep: Sweep, repeats: int, tier: str, p: ProfileConfig) -> list[str]:
    """One consolidation's command line: the profile, its CAD user type's viewsets, the counts, the repeats, the
    policy."""
    viewsets = list(settings.cad_sizes[sweep.user_type or settings.cad_size])
    counts = list(sweep.counts)
    out = [override("scenario", "consolidation"), override("profile", sweep.profile),
           override("scenario.repeats", repeats), override("scenario.mixed.max_guests", counts[-1]),
           override("scenario.mixed.cad_alone", True), override("scenario.mixed.counts_past_miss", 2),
           override("scenario.mixed.cad.overrides", [override("workload.size", "small"),
                                                     override("workload.viewsets", viewsets)])]
    if counts != list(range(1, counts[-1] + 1)):
        out.append(override("scenario.mixed.counts", counts))
    if tier == "smoke":
        out.insert(0, override("preset", "smoke", "+"))
    if sweep.policy == "mps":  # each guest's SM share: its profile's slice of the GPU (the stand-in for fixed share)
        out += [override("sharing", "mps"), override("profile.mps_share_pct", max(1, 100 // max(1, p.max_per_gpu)))]
    return out


def frames_of(viewsets: list[str], tier: str) -> int:
    """Frames one pass of ``viewsets`` replays at ``tier`` (smoke: the preset's frames per test)."""
    per_test = int(workload_class("graphics-replay").smoke["frames_per_test"]) if tier == "smoke" else FRAMES_PER_TEST
    return sum(len(VIEWSETS[v].tests) for v in viewsets) * per_test


def phase_run_seconds(settings: SizingSettings, host: str, tier: str, work: dict[str, float]) -> dict[str, float]:
    """One consolidation phase run's seconds for each CAD user type ('' : the sizing's cad_size): its set-up and the
    longer of the ML guest's work and the CAD guests' replay, a replay being ``work``'s (every viewset) scaled by the
    frames the user type's viewsets replay (a heavy user's 336, a light user's 96 at full size)."""
    per_frame = work["graphics-replay"] / frames_of(list(GraphicsReplayConfig().viewsets), tier)
    types = {"": settings.cad_size, **{t: t for t in settings.cad_users}}
    return {t: round(OVERHEAD_S[host] + max(work["mnist-torch"],
                                            per_frame * frames_of(list(settings.cad_sizes[size]), tier)), 1)
            for t, size in types.items()}


# Where a run writes and what it prints: no part of what a consolidation measures, so not part of its reuse key
WHERE_KEYS = ("tracking_uri", "fallback_tracking_uri", "artifact_dir", "data.cache_dir", "progress", "experiment",
              "wait_for_cores_s")


class SizingPart(NamedTuple):
    profile: str
    policy: str
    comp: Composition
    key: str  # what makes a stored consolidation this part's measurement (bench.sizing_key)
    user_type: str  # the CAD user type its CAD guests stand for (sizing.users)
    label: str  # how it is said and tagged (bench.sizing_part): profile/policy[/type]
    estimate_s: float = 0.0  # its seconds by the plan's estimate: it does not start where fewer are left


class SizingPlan(NamedTuple):
    gpu: str  # the GPU sized for
    candidates: list[ProfileConfig]
    parts: list[SizingPart]
    notes: list[str]
    fleet: list[JsonObject]  # what each node of a fleet (ray.placement=per-node) said it is; [] on this host
    provenance: dict[str, str]  # what the fleet's nodes add to the sizing's provenance
    fitted: budget.Fitted  # what fits sizing.budget_s: the sweeps, repeats, estimate and trims


def reuse_key(inv: Inventory, command_line: list[str], profile: str, policy: str, fleet: list[JsonObject]) -> str:
    """GPU, driver, profile, policy and the consolidation's whole command line (the user's bench overrides too),
    less the keys that only say where it writes or what it prints; on a fleet its nodes' GPUs and drivers."""
    kept = [a for a in command_line if a.partition("=")[0].lstrip("+~") not in WHERE_KEYS]
    gpus = [g for r in fleet for g in r.get("gpus") or []] if fleet else inv.gpus
    drivers = sorted({str(r.get("driver")) for r in fleet}) if fleet else [inv.driver_version or "-"]
    return json.dumps({"gpu": ", ".join(str(g.get("name")) for g in gpus) or "no GPU", "driver": ", ".join(drivers),
                       "profile": profile, "policy": policy, "overrides": kept}, sort_keys=True)


def room(p: ProfileConfig, with_ml: bool) -> int:
    """CAD guests one GPU of ``p`` holds beside the ML guest (its VMs per GPU, less the ML guest's)."""
    return p.max_per_gpu - (1 if with_ml else 0)


def stand_in(settings: SizingSettings, candidates: list[ProfileConfig], deepest: int, with_ml: bool,
             notes: list[str]) -> ProfileConfig:
    """The one profile a host without a GPU measures: ``sizing.consolidation_profile`` where it is a candidate whose
    VMs per GPU allow the counts, else the candidate with the fewest VMs per GPU that allows them (the nearest to a
    whole-GPU user), else the one with the most; said, with why."""
    named = next((c for c in candidates if c.name == settings.consolidation_profile), None)
    if named is not None and room(named, with_ml) >= deepest:
        return named
    allowing = sorted((c for c in candidates if room(c, with_ml) >= deepest), key=lambda c: (c.max_per_gpu, c.name))
    chosen = allowing[0] if allowing else max(candidates, key=lambda c: (c.max_per_gpu, c.name))
    why = (f"{named.name} allows {room(named, with_ml)} CAD guest(s) beside the ML guest" if named is not None else
           f"sizing.consolidation_profile={settings.consolidation_profile} is not a profile of this GPU")
    notes.append(f"no GPU: the stand-in profile is {chosen.name}: its {chosen.max_per_gpu} VM(s) per GPU allow "
                 f"{min(deepest, room(chosen, with_ml))} CAD guest(s) beside the ML guest ({why}, the counts go to "
                 f"{deepest})")
    return chosen


def what_to_measure(settings: SizingSettings, inv: Inventory, candidates: list[ProfileConfig],
                    fleet: list[JsonObject], groups: dict[str, list[str]],
                    notes: list[str]) -> tuple[dict[str, int], dict[str, str]]:
    """(profile -> its deepest count, the fleet's provenance): every candidate on a GPU host, what the fleet's nodes
    can place on a fleet, one stand-in without a GPU; never deeper than a profile's VMs per GPU allow."""
    deepest = settings.counts[-1] if settings.counts else settings.max_guests
    with_ml = settings.mix.get("ml", 0) > 0
    if fleet:
        on_fleet = fleet_candidates.plan(candidates, fleet, groups, deepest)
        notes += on_fleet.notes
        if not on_fleet.counts:
            raise ConfigError("size: no candidate profile can be measured on this fleet: " + "; ".join(notes))
        return on_fleet.counts, on_fleet.provenance
    chosen = candidates if inv.gpus else [stand_in(settings, candidates, deepest, with_ml, notes)]
    if not inv.gpus:
        notes.append(f"no GPU: only {chosen[0].name} measured (on the CPU no profile is enforced: one curve stands "
                     "for none of them); the others' GPU time is not measured")
    counts = {}
    for c in chosen:
        if room(c, with_ml) < 1:
            notes.append(f"{c.name}: not measured: its {c.max_per_gpu} VM(s) per GPU leave no CAD guest beside the "
                         "ML guest's (its CAD users get GPUs of their own: framebuffer bound only)")
        else:
            counts[c.name] = min(deepest, room(c, with_ml))
    if not counts:
        raise ConfigError("size: no candidate profile holds a CAD guest beside an ML guest: " + "; ".join(notes))
    return counts, {}
