"""The run rules (docs/run-rules.md) judged on a bundle's document: each rule's verdict with its reason, and the
bundle's: ``compliant`` or ``not compliant: <rules>``. A bundle's figures are never trusted over its raw data: every
summary and ratio is computed again from the repeats the bundle holds, and the configuration's hash from its
set-up. The rules judge what the figures and runs show, never what the bundle declares of itself: its enforcement from
its figures' validity, its completeness from its run's status and figures, its suite from a commit that is one. A
published result has no raw data: only the reference study this suite ships (the same document, by its content's
hash) is said to be published and not judged; any other bundle saying ``origin: published`` is judged as measured, and
says so. Pure: the document in, verdicts out.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import re
import textwrap
from dataclasses import dataclass
from typing import Any

from suites.errors import inert
from suites.publish.document import config_sha256, ratio_summary, summary
from suites.publish.reference import reference_document
from suites.run_kinds import MEASURED, RunKind
from suites.validity import EMULATED, EMULATED_MPS, ENFORCED, VALIDITY, base_of

__all__ = ["COMPLIANT", "MIN_REPEATS", "PUBLISHED", "RULES", "Verdict", "judge", "verdict_lines", "verdict_of"]

COMPLIANT = "compliant"
PUBLISHED = "published by its authors: not measured by this suite, not judged (no raw repeats)"
MIN_REPEATS = 3  # an interval from Student's t, as every comparison's default
TOLERANCE = 1e-6  # relative: JSON's round trip keeps a float exact; this only forgives a printer's last digit
FAILURES = ("failed", "partial", "interrupted", "ended ", "not a figure")
COMMIT = re.compile(r"^[0-9a-f]{7,40}(-dirty)?$")


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
    """How the profile was enforced, from the figures' own validity (the weakest), never the bundle's word for it:
    a bundle declaring 'enforced' beside figures that say 'not enforced' fails, and says both."""
    declared = doc["system"].get("enforcement", "-")
    access = doc["setup"].get("profile.gpu_access", doc["system"].get("gpu_access", "-"))
    figures = [base_of(f["validity"]) for f in doc["figures"]]
    how = min(figures, key=VALIDITY.index) if figures else base_of(declared)
    ok = how in (ENFORCED, EMULATED, EMULATED_MPS)
    said = f"profile {doc['system'].get('profile', '-')} ({access}): {how}" + \
        ("" if ok else " (no GPU: a CPU stand-in; its GPU figures mean nothing)")
    if figures and base_of(declared) != how:
        return Verdict("profile enforced", False, f"{said}; the bundle declares {str(declared)[:60]!r}, its figures "
                       f"say {how!r}")
    return Verdict("profile enforced", ok, said)


def complete(doc: dict[str, Any]) -> Verdict:
    """Every run and guest complete: the run's own status FINISHED, a bench's or comparison's figures there, no mark
    of a failure or an early end."""
    status, kind = doc["run"]["status"], doc["run"]["kind"]
    if status != "FINISHED":
        return Verdict("every run complete", False, f"the run ended {str(status)[:40]}, not FINISHED")
    if kind in MEASURED and not doc["figures"]:
        return Verdict("every run complete", False, f"a {kind} run with no figure: nothing measured to judge")
    bad = [m for k, m in doc["marks"].items() if k.startswith(FAILURES) or k == "inconclusive"
           and "overlap" not in m and "smoke" not in m and "host busy" not in m]
    return Verdict("every run complete", not bad, bad[0][:300] if bad else "no guest failed, no run ended early")


def overlap(doc: dict[str, Any]) -> Verdict:
    mixed = (doc["run"]["scenario"] in ("mixed", "consolidation")  # scenario names (configs/scenario/), not kinds
             or doc["run"]["kind"] in (RunKind.STUDY, RunKind.SIZING))
    short = [m for m in [*doc["marks"].values(), *doc["answers"].values()] if "overlap" in m]
    if not mixed:
        return Verdict("overlap", None, "not a mixed run: no guests measured beside each other")
    return Verdict("overlap", not short, short[0][:300] if short else "the guests' timed windows overlapped enough")


def unmodified(doc: dict[str, Any]) -> Verdict:
    commit, modified = str(doc["suite"]["commit"]), doc["suite"]["modified"]
    if modified is None or not COMMIT.match(commit):
        return Verdict("unmodified suite", False, f"commit {commit[:60]!r}: the suite's own version is not known")
    if modified != commit.endswith("-dirty"):
        return Verdict("unmodified suite", False, f"commit {commit}: the bundle says modified={modified}, its commit "
                       "says otherwise")
    return Verdict("unmodified suite", not modified, f"commit {commit}" +
                   (": its tree had uncommitted changes (the code that ran is no commit's)" if modified else ""))


def recomputes(doc: dict[str, Any]) -> Verdict:
    """Every summary and ratio from the bundle's own repeats; the configuration's hash from its set-up."""
    by_name = {f["name"]: f for f in doc["figures"]}
    wrong = [f["name"] for f in doc["figures"] if not same(f["summary"], computed(summary, f["values"]))]
    for r in doc["ratios"]:
        of, to = by_name.get(r["of"]), by_name.get(r["to"])
        if of is None or to is None or not same(r["summary"], computed(ratio_summary, of["values"], to["values"],
                                                                        r["summary"]["method"])):
            wrong.append(r["name"])
    if doc["suite"]["config_sha256"] != config_sha256(doc["setup"]):
        wrong.append("the configuration's hash")
    return Verdict("figures recompute", not wrong, ("do not recompute from the bundle's raw repeats: " +
                   ", ".join(wrong[:5])) if wrong else "every figure, interval and ratio recomputes from its repeats")


def conclusive(doc: dict[str, Any]) -> Verdict:
    if doc["run"]["kind"] != RunKind.SIZING:
        return Verdict("conclusive answer", None, "not a sizing")
    said = doc["answers"].get("inconclusive", "")
    return Verdict("conclusive answer", not said, said[:300] if said else "the sizing's answer rests on clean counts")


RULES = (repeats, full_size, clean_host, enforced, complete, overlap, unmodified, recomputes, conclusive)


def computed(how: Any, *values: Any) -> dict[str, Any]:
    """A summary computed again; one that matches no bundle's (n = -1) where its repeats cannot give one (an
    overflow): then it does not recompute."""
    try:
        return how(*values)
    except (OverflowError, ValueError, ZeroDivisionError):
        return {"n": -1}


def content_sha256(doc: dict[str, Any]) -> str:
    """A document's content, less what changes with each writing of the same result (its time, its verdict)."""
    keep = {k: v for k, v in doc.items() if k not in ("published_at", "compliance")}
    return hashlib.sha256(json.dumps(keep, sort_keys=True, default=str).encode()).hexdigest()


@functools.cache
def reference_sha256() -> str:
    return content_sha256(reference_document())


def is_reference(doc: dict[str, Any]) -> bool:
    """The reference study this suite ships, unchanged (by content hash): the one result said to be published."""
    return content_sha256(doc) == reference_sha256()


def judge(doc: dict[str, Any]) -> list[Verdict]:
    """Each rule's verdict on ``doc`` (the reference study: one verdict saying it is published). A bundle that says
    it was published and is not the reference study is judged as measured, its first verdict saying so."""
    if doc["origin"] == "published" and is_reference(doc):
        return [Verdict("published", None, PUBLISHED)]
    said = [Verdict("origin", False, "says 'published' but is not the reference study this suite ships: judged as "
                    "measured")] if doc["origin"] == "published" else []
    return [*said, *(rule(doc) for rule in RULES)]


def verdict_of(verdicts: list[Verdict]) -> str:
    failed = [v.rule for v in verdicts if v.ok is False]
    if any(v.rule == "published" for v in verdicts):
        return PUBLISHED
    return f"not compliant: {', '.join(failed)}" if failed else COMPLIANT


def verdict_lines(verdicts: list[Verdict]) -> list[str]:
    """Each rule's verdict as a command prints it: its name, ok / FAILS / n/a, its reason."""
    lines = [f"  {v.rule:<20} {'n/a' if v.ok is None else ('ok' if v.ok else 'FAILS'):<6} {inert(v.reason)}"
             for v in verdicts]  # a reason may quote the bundle's own text: inert on a terminal
    # at most 120 columns, a reason folded under itself at spaces (round 7 saw lines of 237 columns)
    return [textwrap.fill(line, 120, subsequent_indent=" " * 30, break_long_words=False, break_on_hyphens=False)
            for line in lines]


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
