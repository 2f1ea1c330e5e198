"""What the harness costs around the work it times: a command's measured share and its cost per repeat.

A repeat's *window* runs from its first guest's timed window start to its last guest's end (after the warm-up
steps; ``GuestResult.windows``). The **measured share** is the repeats' windows over the command's wall so far
(its process start to the line: a comparison's own table, plot and record, and a campaign's conclusion, come after
it): what part of the time the command held the host was measurement. The **cost per repeat** is the wall from one
repeat's window end to the next one's start, which no figure measures, split by what it was spent on
(:data:`PARTS`): the guest's own report of its set-up (``GuestResult.info['setup']``) and the runner's
timestamps (:class:`Span`). The first repeat's cost (the command's start, imports, composing, opening the store) is
said apart, as ``to the first window``.

Pure: timestamps in, figures out; the runner takes them (suites/pipeline/orchestrate.py) and prints and records them.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field

from gpu_probe.stats import summarize
from suites.run.outcome import ScenarioOutcome

__all__ = ["PARTS", "HarnessCost", "Span", "as_json", "cost_of", "lines", "metrics", "of_parts", "span_of"]

PLANNING = "planning"  # the runner: run directory, provenance, the ledger note, sampler start, the guests' start
START = "process start and imports"  # interpreter, the suite's imports, the barrier's wait for the slowest guest
SET_UP = "device and data set-up"  # workload.prepare: its framework, device, data, model
CALIBRATION = "calibration"  # a run sized by time: steps timed before the barrier (once per phase)
WARM_UP = "warm-up"  # the barrier's release to the timed window: the warm-up steps
AFTER = "after the window"  # the window's end to the last result: evaluation, the guest's exit
RECORDING = "recording"  # results.json and the tables; the store and plots are written once, after the last repeat
PARTS = (PLANNING, START, SET_UP, CALIBRATION, WARM_UP, AFTER, RECORDING)


@dataclass(frozen=True)
class Span:
    """One repeat of one phase on the runner's and its guests' clocks (epoch seconds)."""

    label: str
    repeat: int
    begun: float  # the runner began it
    started: float  # its guests were started
    released: float  # the start barrier released them (0: never)
    results: float  # every result in (0: not all)
    done: float  # its results kept and shown
    window: tuple[float, float] | None  # its guests' timed windows, first start to last end
    setup: dict[str, float] = field(default_factory=dict)  # the slowest guest's: prepare_s, calibrate_s


def span_of(label: str, repeat: int, begun: float, done: float, outcome: ScenarioOutcome) -> Span:
    windows = [w for g in outcome.guests for w in g.result.windows]
    setups = [g.result.info.get("setup", {}) for g in outcome.guests]
    setup = {k: max((float(s.get(k, 0.0)) for s in setups if isinstance(s, dict)), default=0.0)
             for k in ("prepare_s", "calibrate_s")}
    return Span(label, repeat, begun, outcome.started_at or begun, outcome.released_at, outcome.results_at, done,
                (min(w[0] for w in windows), max(w[1] for w in windows)) if windows else None, setup)


def gap(prev: Span, nxt: Span) -> dict[str, float] | None:
    """The cost between two repeats' windows, by part (they sum to it); None where either has no window."""
    if prev.window is None or nxt.window is None or not prev.results or not nxt.released:
        return None
    setup = nxt.released - nxt.started
    prepare, calibrate = nxt.setup.get("prepare_s", 0.0), nxt.setup.get("calibrate_s", 0.0)
    return {AFTER: prev.results - prev.window[1], RECORDING: prev.done - prev.results,
            PLANNING: nxt.started - prev.done, START: setup - prepare - calibrate, SET_UP: prepare,
            CALIBRATION: calibrate, WARM_UP: nxt.window[0] - nxt.released}


@dataclass(frozen=True)
class HarnessCost:
    """A command's (or a comparison's) harness figures; NaN where its repeats cannot carry one."""

    wall_s: float  # from the command's start to now
    windows_s: float  # the repeats' windows, summed
    repeats: int  # repeats with a window
    first_s: float  # the command's start to its first window
    gaps: list[float]  # each cost per repeat after the first
    parts: dict[str, float]  # each part's median over the gaps

    @property
    def share(self) -> float:
        return self.windows_s / self.wall_s if self.wall_s > 0 else float("nan")


def cost_of(spans: Iterable[Span], t_command: float, now: float) -> HarnessCost:
    spans = list(spans)
    timed = [s for s in spans if s.window is not None]
    gaps = [g for a, b in zip(spans, spans[1:], strict=False) if (g := gap(a, b)) is not None]
    parts = {p: statistics.median(g[p] for g in gaps) for p in PARTS} if gaps else {}
    first = timed[0].window[0] - t_command if timed and timed[0].window else float("nan")
    return HarnessCost(now - t_command, sum(s.window[1] - s.window[0] for s in timed if s.window), len(timed),
                       first, [sum(g.values()) for g in gaps], parts)


def lines(cost: HarnessCost, what: str = "this command") -> list[str]:
    """The harness's figures, said: the share, the cost per repeat with its n and spread, its parts."""
    if not cost.repeats:
        return [f"harness: measured share - (no timed window in {cost.wall_s:.1f} s of {what}'s wall so far: nothing "
                "it ran was a repeat of a comparison)"]
    head = (f"harness: measured share {cost.share:.0%} ({cost.windows_s:.1f} s of timed windows over "
            f"{cost.wall_s:.1f} s of {what}'s wall so far, {cost.repeats} comparison repeat(s): a single run's window "
            f"is not counted); {cost.first_s:.1f} s from its start to the first window")
    if not cost.gaps:
        return [head + "; cost per repeat: - (fewer than 2 repeats with a window)"]
    s = summarize(cost.gaps)
    spread = f"min-max {s.min:.2f}-{s.max:.2f}" if s.n > 1 else "no spread (n=1)"
    parts = ", ".join(f"{p} {v:.2f}" for p, v in cost.parts.items() if v >= 0.005)
    return [head, f"harness: cost per repeat after the first (one window's end to the next one's start): median "
                  f"{s.median:.2f} s ({spread}, n={s.n}); medians by part, s: {parts or 'none over 0.005'}"]


def metrics(cost: HarnessCost) -> dict[str, float]:
    """The figures for the store: ``harness.*`` (seconds, and the share as a fraction)."""
    s = summarize(cost.gaps)
    out = {"harness.measured_share": cost.share, "harness.wall_s": cost.wall_s, "harness.windows_s": cost.windows_s,
           "harness.first_window_s": cost.first_s}
    if cost.gaps:
        out.update({"harness.cost_per_repeat_s.median": s.median, "harness.cost_per_repeat_s.min": s.min,
                    "harness.cost_per_repeat_s.max": s.max, "harness.cost_per_repeat_s.n": float(s.n)})
        out.update({f"harness.part.{p.replace(' ', '_')}_s": v for p, v in cost.parts.items()})
    return out


def as_json(cost: HarnessCost, spans: list[Span]) -> dict[str, object]:
    """``harness.json`` in a comparison's run directory: its figures, each repeat's timestamps and its parts, for
    ``make bench-harness`` and whoever asks where a command's time went."""
    parts = [gap(a, b) for a, b in zip(spans, spans[1:], strict=False)]
    return {"measured_share": cost.share, "wall_s": cost.wall_s, "windows_s": cost.windows_s,
            "repeats": cost.repeats, "first_window_s": cost.first_s, "cost_per_repeat_s": cost.gaps,
            "parts_median_s": cost.parts, "spans": [asdict(s) for s in spans],
            "gaps": [p for p in parts if p is not None]}


def of_parts(docs: Iterable[dict[str, object]], t_command: float, now: float) -> HarnessCost:
    """A campaign's figures from its parts' ``harness.json`` (:func:`as_json`): their windows over the campaign's
    wall, the cost per repeat over every part's repeats (a part's first repeat pays its own start: not counted)."""
    docs = [d for d in docs if isinstance(d, dict)]
    windows = sum(float(d.get("windows_s", 0.0)) for d in docs)  # type: ignore[arg-type]
    repeats = sum(int(d.get("repeats", 0)) for d in docs)  # type: ignore[call-overload]
    gaps = [float(g) for d in docs for g in d.get("cost_per_repeat_s", [])]  # type: ignore[attr-defined]
    parts_each = [g for d in docs for g in d.get("gaps", [])]  # type: ignore[attr-defined]
    parts = {p: statistics.median(float(g.get(p, 0.0)) for g in parts_each) for p in PARTS} if parts_each else {}
    starts = [float(s["window"][0]) for d in docs for s in d.get("spans", [])  # type: ignore[attr-defined]
              if isinstance(s, dict) and s.get("window")]
    return HarnessCost(now - t_command, windows, repeats, min(starts) - t_command if starts else float("nan"), gaps,
                       parts)
