"""A sizing's consolidations read back from the store (never from memory): each one's counts, phases, what puts its
counts in doubt and what its measurement is worth; a stored one reused where it measured the same thing and nothing
in it would clear by measuring again; every one read at each QoS level."""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from suites import store_keys as keys
from suites.capacity import curve, noise
from suites.record.reader import run_marks
from suites.record.store_reader import StoreReader
from suites.run.mixed import MIN_OVERLAP_PCT
from suites.sizing import measured
from suites.sizing.plan import SizingPart
from suites.sizing.settings import STRICT, SizingSettings
from suites.validity import weakest

Key = tuple[str, str, str]  # (profile, policy, CAD user type)


class Read(NamedTuple):
    """One consolidation read back from the store."""

    counts: list[curve.GuestCount]
    phases: dict
    doubts: list[noise.Doubt]
    validity: str
    skipped: list[str]  # values read back that are not numbers (a store edited by hand): skipped, said


def stored(store: StoreReader, experiment: str, key: str) -> str | None:
    """The newest finished consolidation recorded with ``key`` (bench.sizing_key), or None."""
    return store.newest_finished(experiment, "consolidation", keys.SIZING_KEY, key)


def read(store: StoreReader, run_id: str) -> Read:
    """A consolidation's counts, phases, what puts its counts in doubt, and what its measurement is worth."""
    run = store.run(run_id)
    skipped: list[str] = []
    phases = store.phases(run_id, skipped)
    counts = measured.curve_of(phases)
    found = [(m.text, m.voids) for m in run_marks(phases, run.params)]
    busy = run.tags.get(keys.HOST_BUSY, "")
    if busy not in ("", "no") and not any(t.startswith("host busy") for t, _ in found):
        found.insert(0, (busy, True))
    doubts = noise.doubts(found, counts, measured.overlap_of(phases), MIN_OVERLAP_PCT)
    worth = weakest([v for k, v in run.tags.items() if k.startswith(keys.VALIDITY_PREFIX)])
    return Read(counts, phases, doubts, worth, skipped)


def reusable(store: StoreReader | None, part: SizingPart, settings: SizingSettings,
             say: Callable[[str], None]) -> tuple[str, str] | None:
    """(a stored consolidation of ``part``'s measurement, what is in doubt in it: '' where nothing), unless
    measuring again could clear its doubts (a busy host, a short overlap, a failed guest): said either way."""
    found = stored(store, part.comp.cfg.experiment, part.key) if store is not None and settings.reuse else None
    if found is None:
        return None
    doubts = read(store, found).doubts
    if any(d.again for d in doubts):
        say(f"size: stored consolidation {found} is {noise.text_of(doubts)}: measuring again")
        return None
    return found, noise.text_of(doubts)


class Curves(NamedTuple):
    by_level: dict[tuple[str, str], dict[str, curve.Capacity]]  # (user type, level) -> profile -> curve
    doubts: dict[tuple[str, str], str]  # (user type, profile) -> inconclusive text
    validity: dict[str, str]
    phases: list[dict]
    policies: dict[str, dict[str, float]]  # policy -> {profile.n_point}
    notes: list[str]  # what reading them skipped


def read_curves(settings: SizingSettings, store: StoreReader, ids: dict[Key, str]) -> Curves:
    """Each consolidation read at each QoS level (the first policy's curves; every policy's strict n_point)."""
    out = Curves({}, {}, {}, [], {}, [])
    first = settings.policies[0]
    for (name, policy, user_type), run_id in ids.items():
        got = read(store, run_id)
        of = user_type or settings.cad_size  # the CAD users' type
        caps = {level: curve.capacity(got.counts, [curve.Limit(k, v) for k, v in limits.items()])
                for level, limits in settings.levels.items()}
        out.policies.setdefault(policy, {})[f"{name}.n_point"] = float(caps[STRICT].n_point)
        if policy != first and (name, first, user_type) in ids:
            continue
        for level, cap in caps.items():
            out.by_level.setdefault((of, level), {})[name] = cap
        out.doubts[(of, name)] = noise.text_of(got.doubts)
        if got.skipped:
            out.notes.append(f"consolidation {run_id}: {len(got.skipped)} value(s) read back are not numbers, "
                             f"skipped ({', '.join(got.skipped[:3])})")
        out.validity[name] = got.validity
        out.phases.append(got.phases)
    return out
