"""The run rules (docs/run-rules.md) judged on a bundle's document: each rule's verdict with its reason, and the
bundle's: ``compliant`` or ``not compliant: <rules>``. A bundle's figures are never trusted over its raw data: every
summary and ratio is computed again from the repeats the bundle holds, and the configuration's hash from its
set-up. A published result (the reference study's) has no raw data: it is said to be published, never judged.
Pure: the document in, verdicts out.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from suites.publish.document import config_sha256, ratio_summary, summary
from suites.validity import EMULATED, EMULATED_MPS, ENFORCED

__all__ = ["COMPLIANT", "MIN_REPEATS", "PUBLISHED", "RULES", "Verdict", "judge", "verdict_lines", "verdict_of"]

COMPLIANT = "compliant"
PUBLISHED = "published by its authors: not measured by this suite, not judged (no raw repeats)"
MIN_REPEATS = 3  # an interval from Student's t, as every comparison's default
TOLERANCE = 1e-6  # relative: JSON's round trip keeps a float exact; this only forgives a printer's last digit
FAILURES = ("failed", "partial", "interrupted", "ended ", "not a figure")


@dataclass(frozen=True)
class Verdict:
    rule: str
    ok: bool | None  # None: the rule does not apply to this result
    reason: str

    def as_dict(self) -> dict[str, Any]:
        return {"rule": self.rule, "ok": self.ok, "reason": self.reason}


def repeats(doc: dict[str, Any]) -> Verdict:
    few = [f"{f['name']} (n={len(f['values'])})" for f in doc["figures"] if len(f["values"]) < MIN_REPEATS]
    if not doc["figures"]:
        return Verdict("repeats", None, "no figure with repeats (a sizing's answer rests on its consolidations)")
    return Verdict("repeats", not few, f"fewer than {MIN_REPEATS} repeats: " + ", ".join(few[:5]) +
                   (f" and {len(few) - 5} more" if len(few) > 5 else "") if few else
                   f"every figure has >= {MIN_REPEATS} repeats, for an interval")


def full_size(doc: dict[str, Any]) -> Verdict:
    smoke = doc["setup"].get("scale") == "smoke" or doc["setup"].get("sizing.tier") == "smoke" or \
        any("smoke sizes" in m for f in doc["figures"] for m in f["marks"]) or "smoke sizes" in doc["marks"] or \
        any("smoke sizes" in a for a in doc["answers"].values())
    return Verdict("full size", not smoke, "smoke sizes: seconds-long workloads, a check of the machinery, not a "
                   "measurement" if smoke else "every workload at its full size")


def clean_host(doc: dict[str, Any]) -> Verdict:
    busy = [m for m in doc["marks"].values() if m.startswith("host busy")]
    busy += [a for a in doc["answers"].values() if "host busy" in a]
    return Verdict("clean host", not busy, busy[0][:300] if busy else "no other load marked on any repeat")


def enforced(doc: dict[str, Any]) -> Verdict:
    how = doc["system"].get("enforcement", "-")
    declared = doc["setup"].get("profile.gpu_access", doc["system"].get("gpu_access", "-"))
    ok = how in (ENFORCED, EMULATED, EMULATED_MPS)
    return Verdict("profile enforced", ok, f"profile {doc['system'].get('profile', '-')} ({declared}): {how}" +
                   ("" if ok else " (no GPU: a CPU stand-in; its GPU figures mean nothing)"))


def complete(doc: dict[str, Any]) -> Verdict:
    bad = [m for k, m in doc["marks"].items() if k.startswith(FAILURES) or k == "inconclusive"
           and "overlap" not in m and "smoke" not in m and "host busy" not in m]
    return Verdict("every run complete", not bad, bad[0][:300] if bad else "no guest failed, no run ended early")


def overlap(doc: dict[str, Any]) -> Verdict:
    mixed = doc["run"]["scenario"] in ("mixed", "consolidation") or doc["run"]["kind"] in ("study", "sizing")
    short = [m for m in [*doc["marks"].values(), *doc["answers"].values()] if "overlap" in m]
    if not mixed:
        return Verdict("overlap", None, "not a mixed run: no guests measured beside each other")
    return Verdict("overlap", not short, short[0][:300] if short else "the guests' timed windows overlapped enough")


def unmodified(doc: dict[str, Any]) -> Verdict:
    commit, modified = doc["suite"]["commit"], doc["suite"]["modified"]
    if modified is None:
        return Verdict("unmodified suite", False, f"commit {commit}: the suite's own version is not known")
    return Verdict("unmodified suite", not modified, f"commit {commit}" +
                   (": its tree had uncommitted changes (the code that ran is no commit's)" if modified else ""))


def recomputes(doc: dict[str, Any]) -> Verdict:
    """Every summary and ratio from the bundle's own repeats; the configuration's hash from its set-up."""
    by_name = {f["name"]: f for f in doc["figures"]}
    wrong = [f["name"] for f in doc["figures"] if not same(f["summary"], summary(f["values"]))]
    for r in doc["ratios"]:
        of, to = by_name.get(r["of"]), by_name.get(r["to"])
        if of is None or to is None or not same(r["summary"], ratio_summary(of["values"], to["values"])):
            wrong.append(r["name"])
    if doc["suite"]["config_sha256"] != config_sha256(doc["setup"]):
        wrong.append("the configuration's hash")
    return Verdict("figures recompute", not wrong, ("do not recompute from the bundle's raw repeats: " +
                   ", ".join(wrong[:5])) if wrong else "every figure, interval and ratio recomputes from its repeats")


def conclusive(doc: dict[str, Any]) -> Verdict:
    if doc["run"]["kind"] != "sizing":
        return Verdict("conclusive answer", None, "not a sizing")
    said = doc["answers"].get("inconclusive", "")
    return Verdict("conclusive answer", not said, said[:300] if said else "the sizing's answer rests on clean counts")


RULES = (repeats, full_size, clean_host, enforced, complete, overlap, unmodified, recomputes, conclusive)


def judge(doc: dict[str, Any]) -> list[Verdict]:
    """Each rule's verdict on ``doc`` (a published result: one verdict saying so)."""
    if doc["origin"] == "published":
        return [Verdict("published", None, PUBLISHED)]
    return [rule(doc) for rule in RULES]


def verdict_of(verdicts: list[Verdict]) -> str:
    failed = [v.rule for v in verdicts if v.ok is False]
    if any(v.rule == "published" for v in verdicts):
        return PUBLISHED
    return f"not compliant: {', '.join(failed)}" if failed else COMPLIANT


def verdict_lines(verdicts: list[Verdict]) -> list[str]:
    """Each rule's verdict as a command prints it: its name, ok / FAILS / n/a, its reason."""
    return [f"  {v.rule:<20} {'n/a' if v.ok is None else ('ok' if v.ok else 'FAILS'):<6} {v.reason}" for v in verdicts]


def same(given: dict[str, Any], computed: dict[str, Any]) -> bool:
    for key, want in computed.items():
        got = given.get(key)
        if isinstance(want, float) and not math.isfinite(want):  # written null (a reader's), or still a float
            if not (got is None or isinstance(got, float) and not math.isfinite(got)):
                return False
        elif isinstance(want, (int, float)) and not isinstance(want, bool):
            if not isinstance(got, (int, float)) or isinstance(got, bool) or \
                    abs(got - want) > TOLERANCE * max(1.0, abs(want)):
                return False
        elif got != want:
            return False
    return True
