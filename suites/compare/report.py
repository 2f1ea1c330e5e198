"""What changed, for a person: the set-up differences, every figure's A, B and B / A with its interval and verdict
(or its marks), a sizing's answers side by side; as rows (the console's tables), Markdown, HTML and a plot of the
ratios with their intervals (compare.png), the noise band shaded."""

from __future__ import annotations

import math
import statistics
from pathlib import Path

from rich.table import Table

from suites.compare.conclude import MARKED, Change, Compared
from suites.render.markdown import table, write_page
from suites.render.plots import pyplot, save, titled

__all__ = ["FIGURE_HEADERS", "console_table", "figure_rows", "setup_rows", "write"]

FIGURE_HEADERS = ("figure", "A median (n)", "B median (n)", "B / A [95% CI]", "verdict")
SETUP_HEADERS = ("what", "key", "A", "B")
LEFT = ("verdict", "key", "what", "line", "A", "B", "", "started", "set-up change", "marks")  # words, not numbers
CAPTION = ("B / A: the ratio of B's figure to A's, its 95 % interval from both runs' repeats (Welch's t on the logs: "
           "the runs are independent); faster / slower: the interval lies on one side of 1 (for a time, lower is "
           "faster); no change: it lies within 1 ± the noise band; inconclusive: it straddles 1 and is wider, with "
           "the repeats that would settle it; no spread: a side has one repeat; marked: a mark on either run keeps "
           "the verdict off (listed below)")


def console_table(title: str, headers: tuple[str, ...], rows: list[list[str]], caption: str = "") -> Table:
    """Rows as the console shows them: numbers right-aligned, the caption under the table."""
    t = Table(title=title, title_justify="left", caption=caption or None, caption_justify="left")
    for i, h in enumerate(headers):
        t.add_column(h, justify="left" if i == 0 or h in LEFT else "right",
                     overflow="fold")
    for r in rows:
        t.add_row(*r)
    return t


def value(v: float) -> str:
    """A figure as a person reads it: whole numbers from 100 up (24,989), three significant digits below (2.12)."""
    return "-" if not math.isfinite(v) else f"{v:,.0f}" if abs(v) >= 100 else f"{v:,.3g}"


def median_cell(values: list[float]) -> str:
    return f"{value(statistics.median(values))} ({len(values)})" if values else "-"


def ratio_cell(c: Change) -> str:
    r = c.ratio
    if not math.isfinite(r.median):
        return "-"
    return f"{r.median:.3f} [{r.low:.3f}, {r.high:.3f}]" if r.spread else f"{r.median:.3f} (no spread)"


def figure_rows(comp: Compared) -> list[list[str]]:
    """Each figure; a marked one says which marks keep its verdict off (what they say: :func:`mark_lines`)."""
    return [[c.name, median_cell(c.a), median_cell(c.b), ratio_cell(c),
             f"{c.verdict} ({', '.join(c.marks)})" if c.verdict == MARKED else c.verdict] for c in comp.changes]


def setup_rows(comp: Compared) -> list[list[str]]:
    return [[d.aspect, d.key, d.a, d.b] for d in comp.setup]


def mark_lines(comp: Compared) -> list[str]:
    """What each run's marks say, once per run and mark (with how many of its runs each marks), for the marked
    figures' rows to name; and a validity that differs, once."""
    used = {m for c in comp.changes for m in c.marks}
    out = [f"{side}: {line}" for side, run in (("A", comp.a), ("B", comp.b))
           for mark, line in run.mark_lines().items() if f"{side}: {mark}" in used]
    validity = sorted({m for m in used if m.startswith("validity ")})
    return out + [f"{v} ({sum(v in c.marks for c in comp.changes)} figure(s))" for v in validity]


def answer_rows(comp: Compared) -> list[list[str]]:
    """A sizing's answers side by side, each said changed or not."""
    keys = list(dict.fromkeys([*comp.a.answers, *comp.b.answers]))
    return [[k, comp.a.answers.get(k, "-"), comp.b.answers.get(k, "-"),
             "same" if comp.a.answers.get(k) == comp.b.answers.get(k) else "changed"] for k in keys]


def markdown(comp: Compared, figures: list[str]) -> str:
    lines = [f"# What changed: {comp.a.kind} {comp.a.label} → {comp.b.label}", "",
             f"- A: {comp.a.label}, started {comp.a.started}", f"- B: {comp.b.label}, started {comp.b.started}",
             f"- noise band: ±{comp.noise_pct:g} %", "", "## Set-up", ""]
    lines += [*table(SETUP_HEADERS, setup_rows(comp)), ""] if comp.setup else ["same set-up", ""]
    if comp.a.answers or comp.b.answers:
        lines += ["## The sizing's answers", "", *table(("line", "A", "B", ""), answer_rows(comp)), ""]
    if comp.changes:
        lines += ["## Figures", "", *table(FIGURE_HEADERS, figure_rows(comp)), "", CAPTION, ""]
    marked = mark_lines(comp)
    if marked:
        lines += ["## Marked (no verdict)", "", *(f"- {m}" for m in marked), ""]
    if comp.gate:
        lines += [f"## Gate --fail-on {comp.gate}", "", *(gate_lines(comp) or ["passed: no figure past it"]), ""]
    lines += [f"![{f}]({f})" for f in figures]
    return "\n".join(lines) + "\n"


def gate_lines(comp: Compared) -> list[str]:
    return [f"failed: {c.name} slower by {c.worse_pct:.1f} % at its interval's bound (median "
            f"{abs(1 - c.ratio.median) * 100:.1f} %)" for c in comp.failed]


def draw(comp: Compared, folder: Path) -> list[Path]:
    """compare.png: each figure's B / A with its interval, the noise band shaded, marked ones grey."""
    shown = [c for c in comp.changes if math.isfinite(c.ratio.median)]
    if not shown:
        return []
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(9, 1.2 + 0.38 * len(shown)), layout="constrained")
    ax.axvspan(1 - comp.noise_pct / 100, 1 + comp.noise_pct / 100, color="0.9", label=f"±{comp.noise_pct:g} %")
    ax.axvline(1.0, color="0.4", lw=0.8)
    colour = {"faster": "tab:green", "slower": "tab:red"}
    for y, c in enumerate(reversed(shown)):
        r = c.ratio
        tint = "0.6" if c.verdict == MARKED else colour.get(c.verdict, "tab:blue")
        if r.spread:
            ax.plot([r.low, r.high], [y, y], color=tint, lw=2)
        ax.plot([r.median], [y], "o", color=tint)
    ax.set_yticks(range(len(shown)), [f"{c.name}: {c.verdict.split(' (')[0]}" for c in reversed(shown)],
                  fontsize=8)
    ax.set_xlabel(f"B / A (95 % interval; shaded: the ±{comp.noise_pct:g} % no-change band; grey: marked, no verdict)")
    titled(fig, f"What changed: {comp.a.label} → {comp.b.label}")
    return [save(fig, folder / "compare.png", "B / A per figure", comp.b.kind)]


def write(comp: Compared, folder: Path) -> list[Path]:
    """compare.md, compare.html and compare.png into ``folder``; every file written."""
    folder.mkdir(parents=True, exist_ok=True)
    figures = draw(comp, folder)
    return [*write_page(folder, "compare", markdown(comp, [f.name for f in figures])), *figures]
