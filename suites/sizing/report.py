"""A sizing for a person: the answer (or why it is inconclusive), the VM to provision, the density of every candidate
profile per CAD user type and QoS level, each measured profile's counts with what the users feel, the curves
(sizing_plots.py); Markdown, HTML and PNG, the console's tables (within 120 columns) and the MLflow metrics."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.table import Table

from suites.capacity import density
from suites.capacity.curve import Capacity
from suites.capacity.result import SizingResult, title_label
from suites.capacity.solver import Answer, Sized
from suites.render import sizing_plots
from suites.render.markdown import table, write_page
from suites.render.tables import TABLE_WIDTH, fmt
from suites.sizing.settings import STRICT

__all__ = ["console_tables", "markdown", "metrics_of", "recommendation", "write"]

HEADERS = ("profile", "measured", "N safe..point", "knee", "binds (safe)", "CAD/GPU", "GPUs", "hosts", "cost/user",
           "validity")
DENSITY_HEADERS = ("user type", "QoS", "profile", "VMs/GPU", "CAD users/GPU", "CAD users/host", "binds", "what it is")
QOS_KEYS = ("cad_slowdown_pct", "ml_slowdown_pct", "cad_p95_frame_ms", "cad_p99_frame_ms", "cad_stutter_pct",
            "ml_jitter_pct")
FELT_KEYS = ("cad_fps_median", "cad_fps_p5", "cad_p95_frame_ms", "cad_p99_frame_ms", "ml_images_per_sec",
             "host_cpu_pct", "gpu_util_pct")


def span(pair: tuple[Any, Any], pattern: str = "{}", predicted: tuple[bool, bool] = (False, False)) -> str:
    """A (point, safe) pair as 'safe..point' (one figure where they agree, '-' where neither is); an end the curve
    interpolated says ``(predicted)``."""
    point, safe = (fmt(v, pattern) + (" (predicted)" if p and v is not None else "")
                   for v, p in zip(pair, predicted, strict=True))
    return point if point == safe else f"{safe}..{point}"


def counts_measured(cap: Capacity) -> str:
    """'1..4' where every count was measured, else the counts: '1, 2, 4, 8'."""
    counts = cap.measured
    return f"1..{max(counts)}" if counts == list(range(1, max(counts) + 1)) else ", ".join(map(str, counts))


def profile_rows(result: SizingResult) -> list[list[str]]:
    rows = []
    for s in result.answer.sized:
        cap = result.capacities.get(s.profile)
        measured = counts_measured(cap) if cap and cap.measured else "not measured"
        counted = cap is not None and s.binding[0] != "inconclusive"
        ends = span(cap.gpu_time, predicted=(cap.predicted[0] is not None, cap.predicted[1] is not None)) \
            if cap and counted else "inconclusive" if cap else "-"
        rows.append([s.profile + (" *" if s is result.answer.recommended else ""), measured, ends,
                     knee_of(cap) if counted and cap else "-", s.binding[1] if cap else "-",
                     span(s.per_gpu, predicted=s.predicted) if counted else "-", span(s.gpus, predicted=s.predicted),
                     span(s.hosts, predicted=s.predicted), span(s.cost, "{:,.0f}", s.predicted),
                     result.validity.get(s.profile, "-")])
    return rows


def knee_of(cap: Capacity) -> str:
    """The knee, said to lie past QoS where it does (a knee at 2 beside N point 0 read as a capacity of 2)."""
    if cap.knee is None:
        return "-"
    return str(cap.knee) if cap.knee <= cap.n_point else f"{cap.knee} (past QoS)"


def density_rows(result: SizingResult) -> list[list[str]]:
    rows = []
    for user_type, level, c, cell in result.density:
        per_gpu, per_host = density.shown(cell)
        rows.append([f"{user_type} ({result.users.get(user_type, 0)})", level, c.profile, str(c.per_gpu), per_gpu,
                     per_host, cell.binds or "-", cell.label])
    return rows


def count_rows(cap: Capacity, limits: dict[str, float], doubt: str) -> list[list[str]]:
    rows = []
    for r in cap.readings:
        cells = [f"{fmt(r.median.get(k), '{:.1f}')}" + (f" [{fmt(r.upper.get(k), '{:.1f}')}]" if k in limits else "")
                 for k in QOS_KEYS]
        meets = ("inconclusive", "inconclusive") if doubt else \
            ("yes" if r.point_ok else "no", "yes" if r.safe_ok else "no")
        rows.append([str(r.guests), str(r.n), *cells, *meets, r.why or "-"])
    return rows


def felt_rows(cap: Capacity) -> list[list[str]]:
    """What the users feel at each count (nVector's view): medians of the repeats."""
    return [[str(r.guests), str(r.n), *(fmt(r.median.get(k), "{:,.1f}") for k in FELT_KEYS)] for r in cap.readings]


CAPTION = ("N safe..point: CAD guests per GPU beside one ML guest whose upper 95 % bounds..medians meet every QoS "
           "limit; ranges: at N safe..at N point; (predicted): interpolated between two measured counts, not measured")
DENSITY_CAPTION = ("CAD users per GPU / per host as safe..point at each QoS level; measured: the profile's curve; "
                   "predicted: interpolated between measured counts; framebuffer bound only (<= N): not measured, "
                   "how many fit the card (and host); not measured: no figure; inconclusive: measured on noise; "
                   "framebuffer too small: a guest needs more than the profile holds")
COUNT_HEADERS = ("CAD/GPU", "n", "CAD slow %", "ML slow %", "p95 ms", "p99 ms", "stutter %", "ML jitter %",
                "meets", "safe", "why not")
FELT_HEADERS = ("CAD/GPU", "n", "CAD fps (median)", "CAD fps (p5)", "frame p95 ms", "frame p99 ms", "ML images/s",
                "host CPU %", "GPU %")


def answer_line(result: SizingResult, user_type: str, a: Answer, users: int) -> list[str]:
    """One user type's answer: profile, guests per GPU, GPUs, hosts, cost (each a range), and its reasons."""
    who = f"{users} {user_type} CAD user(s)" if len(result.users) > 1 else f"{result.mix.cad} CAD user(s)"
    ml = f" + {result.mix.ml} ML user(s)" if a is result.answer else ""
    if a.inconclusive:
        return [f"{who}{ml} on {result.gpu}: {a.inconclusive}"]
    if a.recommended is None:
        return [f"{who}{ml} on {result.gpu}: no recommendation: {a.error or 'no measured profile serves the mix'}"]
    r, p = a.recommended, a.recommended.predicted
    cost = f"; cost per user {span(r.cost, '{:,.0f}', p)}" if r.cost[0] is not None else ""
    return [f"{who}{ml} on {result.gpu}: {r.profile}, {span(r.per_gpu, '{}', p)} CAD guest(s) per GPU, "
            f"{span(r.gpus, '{}', p)} GPU(s), {span(r.hosts, '{}', p)} host(s){cost} (safe..point: the upper 95 % "
            "bounds..the medians)", *result.provision.get(user_type, []), *r.reasons]


def recommendation(result: SizingResult) -> list[str]:
    """The answer in sentences, each CAD user type's in turn ('inconclusive: ...' where it rests on noise)."""
    answers = result.answers or {"": result.answer}
    out = []
    for user_type, a in answers.items():
        out += answer_line(result, user_type, a, result.users.get(user_type, result.mix.cad))
    return out


def console_tables(result: SizingResult) -> list[Table | str]:
    out: list[Table | str] = [title_label(result), *recommendation(result)]
    starred = " (* recommended)" if result.answer.recommended is not None else ""
    table = Table(title=f"sizing: {result.mix.cad} CAD + {result.mix.ml} ML on {result.gpu}{starred}",
                  title_justify="left", width=TABLE_WIDTH, caption=CAPTION, caption_justify="left")
    for h in HEADERS:
        table.add_column(h, overflow="fold")
    for row in profile_rows(result):
        table.add_row(*row)
    dense = Table(title="density: CAD users per GPU and per host, per user type and QoS level", title_justify="left",
                  width=TABLE_WIDTH, caption=DENSITY_CAPTION, caption_justify="left")
    for h in DENSITY_HEADERS:
        dense.add_column(h, overflow="fold")
    for row in density_rows(result):
        dense.add_row(*row)
    out += [table, dense]
    out += [f"not a candidate: {why}" for why in result.answer.excluded] + result.notes
    return out


def markdown(result: SizingResult, figures: list[str]) -> str:
    starred = " (* recommended)" if result.answer.recommended is not None else ""
    lines = [f"# Sizing: {result.mix.cad} CAD users + {result.mix.ml} ML users on {result.gpu}", "",
             f"> **{title_label(result)}**", "", "## Recommendation", "",
             *(f"- {line}" for line in recommendation(result)), "", f"## Profiles{starred}", "",
             *table(HEADERS, profile_rows(result)), "", CAPTION, "", "## Density", "",
             *table(DENSITY_HEADERS, density_rows(result)), "", DENSITY_CAPTION, ""]
    lines += [f"QoS {level}: " + ", ".join(f"{k} ≤ {v:g}" for k, v in limits.items())
              for level, limits in (result.levels or {"strict": result.limits}).items()] + [""]
    lines += [f"- not a candidate: {why}" for why in result.answer.excluded]
    strict = {k: v for k, v in result.curves.items() if k[1] == STRICT} or {("", STRICT): result.capacities}
    for (user_type, _), curves in strict.items():
        for profile, cap in curves.items():
            of = f" ({user_type} users)" if len(result.users) > 1 else ""
            lines += ["", f"## {profile}{of}: the counts (medians [upper 95 % bound])", "",
                      *table(COUNT_HEADERS, count_rows(cap, result.limits, result.doubt)), "",
                      f"### {profile}{of}: what the users feel (medians)", "", *table(FELT_HEADERS, felt_rows(cap))]
    if result.policies:
        lines += ["", "## Scheduler policy", ""] + [f"- {p}: " + ", ".join(f"{k} {v:g}" for k, v in f.items())
                                                   for p, f in result.policies.items()]
    lines += ["", "## Provenance", "", *(f"- {k}: {v}" for k, v in result.provenance.items()), ""]
    lines += [f"- {n}" for n in result.notes] + [""] + [f"![{f}]({f})" for f in figures]
    return "\n".join(lines) + "\n"


def write(result: SizingResult, folder: Path) -> list[Path]:
    """sizing.md, sizing.html, density.csv and the figure into ``folder``; every file written."""
    folder.mkdir(parents=True, exist_ok=True)
    figures = sizing_plots.draw(result, folder)
    pages = write_page(folder, "sizing", markdown(result, [f.name for f in figures]))
    csv = [",".join(DENSITY_HEADERS)] + [",".join(c.replace(",", "") for c in r) for r in density_rows(result)]
    (folder / "density.csv").write_text("\n".join(csv) + "\n")
    return [*pages, folder / "density.csv", *figures]


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


def metrics_of(result: SizingResult) -> dict[str, float]:
    """The sizing's MLflow metrics: the measured profiles' counts and the answer; none where it is inconclusive
    (its why is a tag), and none for a profile not measured (its framebuffer bound is the density table's)."""
    if result.doubt:
        return {"inconclusive": 1.0}
    metrics: dict[str, float] = {"inconclusive": 0.0}
    for s in result.answer.sized:
        if s.profile in result.capacities:
            metrics.update(sized_metrics(s))
    for profile, cap in result.capacities.items():
        metrics.update({f"{profile}.n_point": float(cap.n_point), f"{profile}.n_safe": float(cap.n_safe)})
        if cap.knee is not None:
            metrics[f"{profile}.knee"] = float(cap.knee)
        for end, n in zip(("n_point", "n_safe"), cap.predicted, strict=True):
            if n is not None:  # interpolated between two measured counts: its own key, never the measured one's
                metrics[f"{profile}.{end}.predicted"] = float(n)
    for user_type, level, c, cell in result.density:
        if cell.per_gpu is not None and cell.label in (density.MEASURED, density.PREDICTED):
            for end, n in zip(("point", "safe"), cell.per_gpu, strict=True):
                metrics[f"density.{user_type}.{level}.{c.profile}.per_gpu.{end}"] = float(n)
    if result.answer.recommended is not None:
        metrics.update({f"answer.{k}": v for k, v in sized_metrics(result.answer.recommended).items()})
    return metrics
