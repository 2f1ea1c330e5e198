"""A sizing for a person: the recommendation and its reasons, each profile's capacity with its range, the curve of
each measured profile with its 95 % band (``N_safe`` / ``N_point`` / knee marked), the cost per user; Markdown, HTML
and PNG, and the console's tables (within 120 columns)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.table import Table

from suites.capacity.curve import Capacity
from suites.capacity.result import SizingResult, title_label
from suites.capacity.solver import Sized
from suites.render.mixed_report import to_html
from suites.render.plots import pyplot, save, titled
from suites.render.tables import TABLE_WIDTH, fmt

__all__ = ["console_tables", "markdown", "write"]

HEADERS = ("profile", "measured", "N safe..point", "knee", "binds (safe)", "CAD/GPU", "GPUs", "hosts", "cost/user",
           "validity")


def span(pair: tuple[Any, Any], pattern: str = "{}", predicted: tuple[bool, bool] = (False, False)) -> str:
    """A (point, safe) pair as 'safe..point' (one figure where they agree, '-' where neither is); an end the curve
    interpolated says ``(predicted)``."""
    point, safe = (fmt(v, pattern) + (" (predicted)" if p and v is not None else "")
                   for v, p in zip(pair, predicted, strict=True))
    return point if point == safe else f"{safe}..{point}"


def steps_measured(cap: Capacity) -> str:
    """'1..4' where every count was measured, else the counts: '1, 2, 4, 8'."""
    counts = cap.measured
    return f"1..{max(counts)}" if counts == list(range(1, max(counts) + 1)) else ", ".join(map(str, counts))


def profile_rows(result: SizingResult) -> list[list[str]]:
    rows = []
    for s in result.answer.sized:
        cap = result.capacities.get(s.profile)
        measured = steps_measured(cap) if cap and cap.measured else "not measured"
        ends = span(cap.gpu_time, predicted=(cap.predicted[0] is not None, cap.predicted[1] is not None)) \
            if cap else "-"
        rows.append([s.profile + (" *" if s is result.answer.recommended else ""), measured,
                     ends if cap else "-", fmt(cap.knee if cap else None, "{}"), s.binding[1] if cap else "-",
                     span(s.per_gpu, predicted=s.predicted) if cap else "-", span(s.gpus, predicted=s.predicted),
                     span(s.hosts, predicted=s.predicted), span(s.cost, "{:,.0f}", s.predicted),
                     result.validity.get(s.profile, "-")])
    return rows


def step_rows(cap: Capacity, limits: dict[str, float]) -> list[list[str]]:
    keys = ("cad_slowdown_pct", "ml_slowdown_pct", "cad_p95_frame_ms", "cad_p99_frame_ms", "cad_stutter_pct",
            "ml_jitter_pct")
    rows = []
    for r in cap.readings:
        cells = [f"{fmt(r.median.get(k), '{:.1f}')}" + (f" [{fmt(r.upper.get(k), '{:.1f}')}]" if k in limits else "")
                 for k in keys]
        rows.append([str(r.guests), str(r.n), *cells, "yes" if r.point_ok else "no",
                     "yes" if r.safe_ok else "no", r.why or "-"])
    return rows


CAPTION = ("N safe..point: CAD guests per GPU beside one ML guest whose upper 95 % bounds..medians meet every QoS "
           "limit; ranges: at N safe..at N point; (predicted): interpolated between two measured steps, not measured")
STEP_HEADERS = ("CAD/GPU", "n", "CAD slow %", "ML slow %", "p95 ms", "p99 ms", "stutter %", "ML jitter %",
                "meets", "safe", "why not")


def recommendation(result: SizingResult) -> list[str]:
    """The answer in sentences: profile, guests per GPU, GPUs, hosts, cost (each a range), and its reasons."""
    a, mix = result.answer, result.mix
    if a.recommended is None:
        return [f"no recommendation: {a.error or 'no measured profile serves the mix'}"]
    r = a.recommended
    cost = f"; cost per user {span(r.cost, '{:,.0f}', r.predicted)}" if r.cost[0] is not None else ""
    p = r.predicted
    return [f"{mix.cad} CAD user(s) + {mix.ml} ML job(s) on {result.gpu}: {r.profile}, {span(r.per_gpu, '{}', p)} "
            f"CAD guest(s) per GPU, {span(r.gpus, '{}', p)} GPU(s), {span(r.hosts, '{}', p)} host(s){cost} "
            "(safe..point: the upper 95 % bounds..the medians)", *r.reasons]


def console_tables(result: SizingResult) -> list[Table | str]:
    out: list[Table | str] = [title_label(result), *recommendation(result)]
    table = Table(title=f"sizing: {result.mix.cad} CAD + {result.mix.ml} ML on {result.gpu} (* recommended)",
                  title_justify="left", width=TABLE_WIDTH,
                  caption=CAPTION, caption_justify="left")
    for h in HEADERS:
        table.add_column(h, overflow="fold")
    for row in profile_rows(result):
        table.add_row(*row)
    out.append(table)
    out += [f"not a candidate: {why}" for why in result.answer.excluded] + result.notes
    return out


def markdown(result: SizingResult, figures: list[str]) -> str:
    def table(headers: tuple[str, ...], rows: list[list[str]]) -> list[str]:
        return [f"| {' | '.join(headers)} |", f"|{'---|' * len(headers)}", *(f"| {' | '.join(r)} |" for r in rows)]

    lines = [f"# Sizing: {result.mix.cad} CAD users + {result.mix.ml} ML jobs on {result.gpu}", "",
             f"> **{title_label(result)}**", "", "## Recommendation", "",
             *(f"- {line}" for line in recommendation(result)), "", "## Profiles", "",
             *table(HEADERS, profile_rows(result)), "", CAPTION, "",
             "QoS limits: " + ", ".join(f"{k} ≤ {v:g}" for k, v in result.limits.items()), ""]
    lines += [f"- not a candidate: {why}" for why in result.answer.excluded]
    for profile, cap in result.capacities.items():
        lines += ["", f"## {profile}: the steps (medians [upper 95 % bound])", "",
                  *table(STEP_HEADERS, step_rows(cap, result.limits))]
    if result.policies:
        lines += ["", "## Scheduler policy", ""] + [f"- {p}: " + ", ".join(f"{k} {v:g}" for k, v in f.items())
                                                   for p, f in result.policies.items()]
    lines += ["", "## Provenance", "", *(f"- {k}: {v}" for k, v in result.provenance.items()), ""]
    lines += [f"- {n}" for n in result.notes] + [""] + [f"![{f}]({f})" for f in figures]
    return "\n".join(lines) + "\n"


def draw(result: SizingResult, out_dir: Path) -> list[Path]:
    """Each measured profile's curve: its load (worst QoS metric over its limit) by CAD guests per GPU, the band to
    the upper 95 % bound, the limit at 1, N safe, N point and the knee marked."""
    if not result.capacities:
        return []
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(7, 3.8), constrained_layout=True)
    for profile, cap in result.capacities.items():
        xs = [r.guests for r in cap.readings]
        load = [r.load for r in cap.readings]
        line = ax.plot(xs, load, marker="o", label=f"{profile} (N {cap.n_safe}..{cap.n_point})")[0]
        ax.fill_between(xs, load, [r.upper_load if r.upper_load == r.upper_load else r.load for r in cap.readings],
                        color=line.get_color(), alpha=0.2)
        for n, mark in ((cap.n_point, "^"), (cap.n_safe, "v"), (cap.knee, "s")):
            if n:
                y = next(r.load for r in cap.readings if r.guests == n)
                ax.plot([n], [y], mark, color=line.get_color(), markersize=9)
    ax.axhline(1.0, color="red", linestyle="--", linewidth=1, label="QoS limit")
    from matplotlib.ticker import MaxNLocator

    ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # guest counts: whole numbers
    ax.set_xlabel("CAD guests per GPU (beside one ML guest)")
    ax.set_ylabel("worst QoS metric / its limit")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    title = "capacity by profile: ▲ N point, ▼ N safe, ■ knee; band: to the upper 95 % bound"
    titled(fig, title, title_label(result))
    return [save(fig, out_dir / "sizing.png", title, result.weakest)]


def write(result: SizingResult, out_dir: Path) -> list[Path]:
    """sizing.md, sizing.html and the figure into ``out_dir``; every file written."""
    out_dir.mkdir(parents=True, exist_ok=True)
    figures = draw(result, out_dir)
    text = markdown(result, [f.name for f in figures])
    (out_dir / "sizing.md").write_text(text)
    (out_dir / "sizing.html").write_text(to_html(text))
    return [out_dir / "sizing.md", out_dir / "sizing.html", *figures]


def sized_metrics(s: Sized) -> dict[str, float]:
    """One candidate's answer as MLflow metrics (point and safe ends)."""
    out: dict[str, float] = {}
    for end, i in (("point", 0), ("safe", 1)):
        out[f"{s.profile}.per_gpu.{end}"] = float(s.per_gpu[i])
        out[f"{s.profile}.predicted.{end}"] = float(s.predicted[i])  # 1: that end's figures are interpolated
        for name, pair in (("gpus", s.gpus), ("hosts", s.hosts), ("cost_per_user", s.cost)):
            if pair[i] is not None:
                out[f"{s.profile}.{name}.{end}"] = float(pair[i])  # type: ignore[arg-type]
    return out
