"""Two runs' figures set side by side: B / A with its 95 % interval from their repeats and a verdict (faster,
slower, no change inside the noise band, inconclusive with the repeats that would settle it, no spread with one
repeat), or the marks that keep a verdict off it; the gate a nightly run exits on; and what one ``make compare``
concluded (:class:`Compared`, from :func:`compare`), pure; and its MLflow run recorded (:func:`record`), as the
study's and the sizing's conclusions are recorded by their conclude.py."""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass, field
from pathlib import Path

from gpu_probe.stats import NOISE_PCT, SLOWER, Interval, change, unpaired_ratio_interval, worse_by_pct
from suites import store_keys as keys
from suites.compare.results import Figure, RunFigures
from suites.compare.settings import CompareSettings, Gate
from suites.compare.setups import Difference, differences
from suites.config.compose import compose
from suites.config.schema import register_configs
from suites.record import mlflow_runs
from suites.record.recorder import Recorder
from suites.run.shield import Shield, interrupt_reason, noted
from suites.run_kinds import RunKind
from suites.validity import ENFORCED

__all__ = ["MARKED", "Change", "Compared", "changes", "compare", "gate", "record"]

MARKED = "marked"  # a verdict kept off by a mark


@dataclass
class Change:
    """One figure both runs hold."""

    name: str
    unit: str
    higher_is_better: bool
    a: list[float]
    b: list[float]
    ratio: Interval  # B / A
    verdict: str  # faster, slower, no change, inconclusive (...), no spread, or MARKED
    marks: list[str] = field(default_factory=list)  # why there is no verdict
    validity: str = ENFORCED

    @property
    def worse_pct(self) -> float:
        """How much worse B is by the interval's nearer bound (NaN without a verdict or an interval)."""
        return worse_by_pct(self.ratio, self.higher_is_better) if self.verdict != MARKED else math.nan


def changes(a: dict[str, Figure], b: dict[str, Figure], noise_pct: float = NOISE_PCT) -> list[Change]:
    """Every figure both hold, in A's order. A mark on either side keeps the verdict off (said which side); so
    does a validity that differs (enforced on one side, emulated or not enforced on the other: not the same
    measurement). The same validity on both, not enforced included, compares like with like: the verdict stands."""
    out = []
    for name, fa in a.items():
        fb = b.get(name)
        if fb is None:
            continue
        marks = [f"A: {m}" for m in fa.marks] + [f"B: {m}" for m in fb.marks]
        if fa.validity != fb.validity:
            marks.append(f"validity {fa.validity} → {fb.validity}: not the same measurement")
        ratio = unpaired_ratio_interval(fa.values, fb.values)
        verdict = MARKED if marks else change(ratio, fa.higher_is_better, noise_pct)
        out.append(Change(name, fa.unit, fa.higher_is_better, fa.values, fb.values, ratio, verdict, marks,
                          fb.validity if fa.validity == fb.validity else f"{fa.validity} → {fb.validity}"))
    return out


def gate(found: list[Change], rule: Gate) -> list[Change]:
    """The figures that fail the gate: slower, and by more than ``rule.pct`` % even at the interval's bound."""
    return [c for c in found if c.verdict == SLOWER and c.worse_pct > rule.pct]


@dataclass
class Compared:
    """Everything ``make compare`` found, ready to show."""

    a: RunFigures
    b: RunFigures
    setup: list[Difference]
    changes: list[Change]
    noise_pct: float
    failed: list[Change]  # what failed --fail-on ([] without one)
    gate: str = ""  # the --fail-on rule as given ('' without one)


def compare(a: RunFigures, b: RunFigures, noise_pct: float, rule: Gate | None) -> Compared:
    """A and B side by side; a LookupError where they are of different kinds or hold nothing in common."""
    if a.kind != b.kind:
        raise LookupError(f"A {a.label} is a {a.kind} run and B {b.label} a {b.kind} run: compare runs of one kind")
    found = changes(a.figures, b.figures, noise_pct)
    if not found and not (a.answers and b.answers):
        raise LookupError(f"A {a.label} and B {b.label} hold no figure in common (A: "
                          f"{', '.join(list(a.figures)[:3]) or 'none'}; B: {', '.join(list(b.figures)[:3]) or 'none'})")
    failed = gate(found, rule) if rule else []
    return Compared(a, b, differences(a.setup, b.setup), found, noise_pct, failed,
                      f"{rule.what}:{rule.pct:g}" if rule else "")


def record(args: CompareSettings, comp: Compared, files: list[Path], folder: Path) -> str | None:
    """One MLflow run of this make compare, naming A and B, its report as artifacts (its fallback store where this
    one fails, as every record)."""
    register_configs()
    cfg, _ = compose([f"tracking_uri={args.tracking_uri}", f"experiment={args.experiment}"])
    recorder = Recorder(cfg, lambda line: print(line, file=sys.stderr))
    metrics = {f"{c.name}.ratio": c.ratio.median for c in comp.changes if c.ratio.median == c.ratio.median}
    counts = {f"verdicts.{v}": float(sum(c.verdict.split(" (")[0] == v for c in comp.changes))
              for v in ("faster", "slower", "no change", "inconclusive", "no spread", MARKED)}
    params = {"a": comp.a.run.run_id, "b": comp.b.run.run_id, "kind": comp.a.kind, "noise_pct": comp.noise_pct,
              "fail_on": comp.gate or "-", "setup_differences": len(comp.setup)}
    ref = None
    try:  # a second of store writes: an interrupt waits for them (a third press ends the run KILLED, never RUNNING)
        with Shield(recorder.say, "recording make compare's run"):
            ref = recorder.start_parent(f"compare-{folder.name}", {
                keys.ROLE: RunKind.COMPARE, keys.KIND: RunKind.COMPARE, keys.COMPARED_A: comp.a.run.run_id,
                keys.COMPARED_B: comp.b.run.run_id})
            ref = recorder.parent_results(ref, mlflow_runs.ParentResults(
                params, {**metrics, **counts}, {keys.STATUS: "failed" if comp.failed else "ok"}), folder)
            recorder.finish(ref, files, "FINISHED")
    except BaseException:  # given up, or a fault: ended KILLED under a shield no further signal can break
        with Shield(recorder.say, "ending make compare's run KILLED", give_up=None):
            recorder.finish(ref, [], "KILLED")
        raise
    if noted() is not None:  # held off while it recorded: recorded whole, ended KILLED; main says it and exits 130
        recorder.stopped(ref, f"{interrupt_reason()} while it was recorded")
    return ref.run_id if ref is not None else None
