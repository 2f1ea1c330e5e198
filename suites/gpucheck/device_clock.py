"""A check on the device's clock: its wall, the part of it that was work (the timed windows of the runs it recorded:
training steps and CAD replays, at the GPU's speed on the GPU, at the device file's in a rehearsal) and the harness
around that work (the rest: processes and imports, device and data set-up, warm-up, recording, planning).

``make gpu-check`` measures each check's and writes them into its device file (``harness_s``: per check, its wall,
work, runs and seconds to its first window). ``make rehearse`` charges each check it plays its work here (played at
the device file's speeds) plus the harness cost the device measured for that check, else this host's (said: a 2-core
host's harness is slower than a GPU host's, so the charge is an upper bound), never a fixed table; a check it cannot
play (what only the GPU says) costs its estimate. Each check is held to its share of the budget (:func:`share_end`:
what is left less the estimates of the checks after it), so none starves the ones after it.

Pure but for :func:`results_under` and :func:`clock_of`, which read the check's folder."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from gpu_probe.shapes import JsonObject

__all__ = ["CheckClock", "charge", "clock_of", "results_under", "share_end", "windows_of"]

MAX_RESULTS_BYTES = 64 * 2**20  # as suites.record.rundir reads one


@dataclass(frozen=True)
class CheckClock:
    """One check's seconds: its wall, its runs' timed windows in it, and the rest (the harness's)."""

    wall_s: float
    work_s: float  # each run's timed windows, first start to last end, summed over its runs
    runs: int  # runs with a timed window
    first_window_s: float | None  # the check's start to its first timed window (None: no window)

    @property
    def harness_s(self) -> float:
        return max(self.wall_s - self.work_s, 0.0)

    def as_json(self) -> JsonObject:
        return {"wall_s": round(self.wall_s, 2), "work_s": round(self.work_s, 2), "harness_s": round(self.harness_s, 2),
                "runs": self.runs, "first_window_s": None if self.first_window_s is None else
                round(self.first_window_s, 2)}


COPIES = {"mlartifacts", "mlflow-export"}  # the store's artifacts and its export: copies of a run's files


def results_under(root: Path) -> set[Path]:
    """Every run's results.json under a gpu-check's folder (its runs/, study/, sizing/), each once: never its copy
    in the store's artifacts or in the export."""
    found = set()
    for folder, subdirs, files in os.walk(root):  # nothing under root: nothing found
        subdirs[:] = [d for d in subdirs if d not in COPIES]  # never walked into: a store holds every run's files
        if "results.json" in files:
            found.add(Path(folder) / "results.json")
    return found


def windows_of(doc: object) -> tuple[float, float] | None:
    """A run's timed span from its results.json: its guests' windows, first start to last end (None: none)."""
    guests = doc.get("guests") if isinstance(doc, dict) else None
    spans = [(float(w[0]), float(w[1])) for g in guests or [] if isinstance(g, dict)
             for w in (g.get("result") or {}).get("windows") or []
             if isinstance(w, (list, tuple)) and len(w) == 2 and all(isinstance(x, (int, float)) for x in w)]
    spans = [(a, b) for a, b in spans if b >= a]
    return (min(a for a, _ in spans), max(b for _, b in spans)) if spans else None


def clock_of(root: Path, before: set[Path], started: float, wall_s: float) -> CheckClock:
    """The check that began at ``started`` (epoch s) and took ``wall_s``: the runs it wrote under ``root`` (those
    not in ``before``), their windows."""
    spans = []
    for path in sorted(results_under(root) - before):
        try:
            if path.stat().st_size <= MAX_RESULTS_BYTES:
                span = windows_of(json.loads(path.read_text()))
                if span is not None:
                    spans.append(span)
        except (OSError, ValueError, UnicodeDecodeError):
            continue  # a run that left no readable result did no work this clock can see
    first = min((a for a, _ in spans), default=None)
    return CheckClock(wall_s, min(sum(b - a for a, b in spans), wall_s), len(spans),
                      None if first is None else max(first - started, 0.0))


def share_end(deadline: float, now: float, check: str, chosen: list[str], estimates: Mapping[str, float]) -> float:
    """When ``check``, starting ``now``, must end: the campaign's ``deadline`` less the estimates of the checks
    after it (its share: what it is estimated to need and what the checks before it left unused), never less than
    its own estimate from now (the executor started it because that fitted), never past the deadline."""
    after = chosen[chosen.index(check) + 1:] if check in chosen else []
    reserve = sum(float(estimates[c]) for c in after)
    return min(deadline, max(deadline - reserve, now + float(estimates.get(check, 0.0))))


def charge(here: CheckClock, device: JsonObject | None) -> tuple[float, str]:
    """A played check's seconds on the device's clock: its work here (at the device file's speeds) plus the harness
    cost the device measured for it (``device``: its device file's ``harness_s`` entry), else this host's; and whose
    harness cost it is."""
    measured = (device or {}).get("harness_s")
    if isinstance(measured, (int, float)) and not isinstance(measured, bool) and measured >= 0:
        return here.work_s + float(measured), "the device's"
    return here.work_s + here.harness_s, "this host's"
