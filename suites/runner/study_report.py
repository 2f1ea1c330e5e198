"""``make report``: the mixed-workload study read back from the MLflow store, as Markdown + HTML + PNGs.

Built only from what the store holds (phase runs and their guest runs), never
from a runner's memory, through the same :mod:`suites.runner.study` functions
the runner used, so a report and the run it describes agree by construction.
The notebook ``notebooks/consolidation_report.ipynb`` calls :func:`build`.
"""

from __future__ import annotations

import argparse
import html
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from suites.runner import study
from suites.runner.report import fmt

FIGURES = ("slowdown.png", "sequential_vs_concurrent.png", "cpu_utilisation.png", "consolidation.png")


@dataclass
class Report:
    mixed: dict[str, dict[str, float]] = field(default_factory=dict)  # profile -> derived figures
    consolidation: dict[str, float] = field(default_factory=dict)
    consolidation_profile: str = ""
    sources: list[str] = field(default_factory=list)  # comparison run ids read


def _phase_numbers(client: Any, comparison_id: str) -> dict[str, study.PhaseNumbers]:
    """Each phase run under the comparison, reduced to PhaseNumbers from its own and its guests' metrics."""
    exp = client.get_run(comparison_id).info.experiment_id
    phases = client.search_runs([exp], f"tags.mlflow.parentRunId = '{comparison_id}'", max_results=1000)
    out = {}
    for run in sorted(phases, key=lambda r: r.info.start_time):
        label = run.data.tags.get("bench.phase")
        if not label:
            continue
        guests = client.search_runs([exp], f"tags.mlflow.parentRunId = '{run.info.run_id}'", max_results=1000)
        out[label] = study.PhaseNumbers.from_guests(
            run.data.metrics, [(g.data.params.get("workload", "?"), g.data.tags.get("bench.status") == "ok",
                                g.data.metrics) for g in guests])
    return out


def _latest(client: Any, experiment: str, kind: str) -> Any:
    exp = client.get_experiment_by_name(experiment)
    if exp is None:
        return None
    runs = client.search_runs([exp.experiment_id], f"tags.`bench.kind` = '{kind}'", max_results=1,
                              order_by=["attributes.start_time DESC"])
    return runs[0] if runs else None


def build(tracking_uri: str, experiment: str = "gpu-mixed-bench", mixed_run: str | None = None,
          consolidation_run: str | None = None, latest: bool = True) -> Report:
    """The report's numbers from the store: the given comparison runs, else (``latest``) the newest of each kind."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri)
    rep = Report()
    find = (lambda kind: _latest(client, experiment, kind)) if latest else (lambda kind: None)
    mixed = client.get_run(mixed_run) if mixed_run else find("mixed")
    if mixed is not None:
        flat = study.by_profile(_phase_numbers(client, mixed.info.run_id))
        for key, value in flat.items():
            profile, name = key.split(".", 1)
            rep.mixed.setdefault(profile, {})[name] = value
        rep.sources.append(mixed.info.run_id)
    cons = client.get_run(consolidation_run) if consolidation_run else find("consolidation")
    if cons is not None:
        numbers = _phase_numbers(client, cons.info.run_id)
        params = cons.data.params
        rep.consolidation = study.consolidation_metrics(numbers, float(params.get("qos_p95_frame_ms", "nan")),
                                                        float(params.get("qos_ml_slowdown_pct", "nan")))
        rep.consolidation_profile = next(iter(numbers), "?/").split("/")[0]
        rep.sources.append(cons.info.run_id)
    return rep


# --- rendering ---------------------------------------------------------------------------------------
MIXED_COLUMNS = (  # (header, key, format)
    ("CAD run time +%", "cad_run_time_increase_pct", "{:+.1f}"),
    ("ML train time +%", "ml_train_time_increase_pct", "{:+.1f}"),
    ("CAD p95 ms alone", "cad_p95_frame_ms_alone", "{:.1f}"),
    ("CAD p95 ms mixed", "cad_p95_frame_ms_mixed", "{:.1f}"),
    ("sequential s", "sequential_s", "{:.1f}"),
    ("concurrent s", "concurrent_s", "{:.1f}"),
    ("concurrent/sequential", "concurrent_vs_sequential", "{:.2f}"),
    ("CPU % cad", "cad.host_cpu_pct", "{:.0f}"),
    ("CPU % mixed", "mixed.host_cpu_pct", "{:.0f}"),
    ("CPU % ml", "ml.host_cpu_pct", "{:.0f}"),
    ("GPU % mixed", "mixed.gpu_util_pct", "{:.0f}"),
    ("energy J mixed", "mixed.energy_J", "{:.0f}"),
)


def mixed_rows(rep: Report) -> list[list[str]]:
    return [[p, *(fmt(d.get(k), f) for _, k, f in MIXED_COLUMNS)] for p, d in rep.mixed.items()]


def consolidation_rows(rep: Report) -> list[list[str]]:
    c, rows = rep.consolidation, []
    for n in sorted(int(k[1:].split(".")[0]) for k in c if k.endswith(".meets_qos")):
        rows.append([str(n), fmt(c.get(f"n{n}.p95_frame_ms_worst"), "{:.1f}"),
                     fmt(c.get(f"n{n}.ml_slowdown_pct"), "{:+.1f}"), fmt(c.get(f"n{n}.host_cpu_pct"), "{:.0f}"),
                     "yes" if c.get(f"n{n}.meets_qos") else "no"])
    return rows


def console_tables(rep: Report) -> list[Any]:
    from rich.table import Table

    tables = []
    if rep.mixed:
        t = Table(title="mixed CAD + ML, per profile (from the MLflow store)", title_justify="left")
        for h in ("profile", *(h for h, _, _ in MIXED_COLUMNS)):
            t.add_column(h, justify="left" if h == "profile" else "right")
        for row in mixed_rows(rep):
            t.add_row(*row)
        tables.append(t)
    if rep.consolidation:
        t = Table(title=f"consolidation on {rep.consolidation_profile}: {rep.consolidation['guests_at_qos']:.0f} "
                        "CAD guest(s) per GPU at QoS", title_justify="left")
        for h in ("CAD guests", "worst p95 ms", "ML slowdown %", "host CPU %", "meets QoS"):
            t.add_column(h, justify="right")
        for row in consolidation_rows(rep):
            t.add_row(*row)
        tables.append(t)
    return tables


def markdown(rep: Report, figures: list[str]) -> str:
    def table(headers: list[str], rows: list[list[str]]) -> list[str]:
        return [f"| {' | '.join(headers)} |", f"|{'---|' * len(headers)}", *(f"| {' | '.join(r)} |" for r in rows)]

    lines = ["# Mixed CAD + ML workloads: consolidation report", "",
             f"MLflow comparison runs: {', '.join(rep.sources) or 'none found'}", ""]
    if rep.mixed:
        lines += ["## Per profile (phase 1 CAD alone, phase 2 mixed, phase 3 ML alone)", "",
                  *table(["profile", *(h for h, _, _ in MIXED_COLUMNS)], mixed_rows(rep)), ""]
    if rep.consolidation:
        lines += [f"## Consolidation on {rep.consolidation_profile}: "
                  f"{rep.consolidation['guests_at_qos']:.0f} CAD guest(s) per GPU at QoS", "",
                  *table(["CAD guests", "worst p95 ms", "ML slowdown %", "host CPU %", "meets QoS"],
                         consolidation_rows(rep)), ""]
    lines += [f"![{f}]({f})" for f in figures]
    return "\n".join(lines) + "\n"


def to_html(md_text: str) -> str:
    """A small Markdown subset (headings, tables, images) to standalone HTML."""
    body, in_table = [], False
    for line in md_text.splitlines():
        if line.startswith("|"):
            cells = [html.escape(c.strip()) for c in line.strip("|").split("|")]
            if set("".join(cells)) <= set("-"):
                continue
            tag = "th" if not in_table else "td"
            body.append(("<table>" if not in_table else "") + "<tr>" + "".join(f"<{tag}>{c}</{tag}>" for c in cells)
                        + "</tr>")
            in_table = True
            continue
        if in_table:
            body.append("</table>")
            in_table = False
        if line.startswith("#"):
            level = len(line) - len(line.lstrip("#"))
            body.append(f"<h{level}>{html.escape(line[level:].strip())}</h{level}>")
        elif line.startswith("!["):
            src = line[line.index("(") + 1: -1]
            body.append(f'<p><img src="{html.escape(src)}" alt="{html.escape(src)}"></p>')
        elif line:
            body.append(f"<p>{html.escape(line)}</p>")
    style = "body{font-family:sans-serif;max-width:1100px}td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}"
    return f"<!doctype html><html><head><meta charset='utf-8'><style>{style}</style></head><body>" + "\n".join(
        body) + ("</table>" if in_table else "") + "</body></html>\n"


def write(rep: Report, out_dir: Path) -> list[Path]:
    """report.md, report.html and the figures into out_dir; returns every file written."""
    from suites.runner import study_plots

    out_dir.mkdir(parents=True, exist_ok=True)
    figures = study_plots.draw(rep, out_dir)
    md_text = markdown(rep, [f.name for f in figures])
    (out_dir / "report.md").write_text(md_text)
    (out_dir / "report.html").write_text(to_html(md_text))
    return [out_dir / "report.md", out_dir / "report.html", *figures]


def publish(tracker: Any, comparison_id: str, run_dir: Path, out: Any) -> None:
    """Build the report of this comparison run from the store and log it to that run."""
    kind = tracker.client.get_run(comparison_id).data.tags.get("bench.kind")
    rep = build(tracker.uri, tracker.experiment, mixed_run=comparison_id if kind == "mixed" else None,
                consolidation_run=comparison_id if kind == "consolidation" else None, latest=False)
    files = write(rep, run_dir / "report")
    for f in files:
        tracker.client.log_artifact(comparison_id, str(f), "report")
    for t in console_tables(rep):
        out.print(t)
    out.print(f"report: {files[1]} (and report.md, figures; logged to the comparison run)", markup=False)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m suites.runner.study_report", description=__doc__)
    ap.add_argument("--tracking-uri", default="sqlite:///outputs/mlflow.db")
    ap.add_argument("--experiment", default="gpu-mixed-bench")
    ap.add_argument("--out", default="outputs/report")
    ap.add_argument("--mixed-run", help="comparison run id (default: the latest mixed run)")
    ap.add_argument("--consolidation-run", help="comparison run id (default: the latest consolidation run)")
    args = ap.parse_args(argv)
    rep = build(args.tracking_uri, args.experiment, args.mixed_run, args.consolidation_run)
    if not rep.sources:
        print(f"error: no mixed or consolidation run in {args.tracking_uri} (run: make bench scenario=mixed)",
              file=sys.stderr)
        return 2
    files = write(rep, Path(args.out))
    print(markdown(rep, []))
    print(f"report: {files[1]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
