"""``make compare A=<run> B=<run>`` (``python -m suites compare A B``): what changed between two runs of one kind
(bench, comparison, study, sizing), and is it more than noise? The set-up differences, then every figure both hold
with B / A, its 95 % interval and a verdict (or the marks that keep one off it); ``--fail-on slower:5`` exits 1
where a figure is slower by more than 5 % at its interval's bound, for a nightly job; ``--history <figure>`` that
figure over this machine's runs. The report (md, html, png) in ``<--out>/<time>/`` and on one MLflow run that names
A and B."""

from __future__ import annotations

import shutil
import sys
import time
from pathlib import Path

from rich.console import Console

from gpu_probe.inventory import collect
from suites.compare import conclude, history, lookup, report
from suites.compare.settings import CompareSettings, parse
from suites.config.schema import TRACKING_URI, run_stamp
from suites.errors import ConfigError, first_line, redact
from suites.record import owed
from suites.record.store import cap_retries, check_server, missing_store
from suites.record.store_reader import StoreReader
from suites.render.tables import console_width
from suites.run.outcome import EXIT_INTERRUPTED
from suites.run.shield import honour, interrupt_reason

EXIT_GATE = 1  # --fail-on: a figure past its rule


def main(argv: list[str] | None = None) -> int:
    try:
        args = parse(argv, __doc__)
        missing = missing_store(args.tracking_uri)
        if missing:
            raise ConfigError(f"--tracking-uri {args.tracking_uri}: {missing} (make bench records into {TRACKING_URI})")
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    cap_retries(args.tracking_uri)
    try:  # a server that does not answer is said as such, never as "no such run"
        check_server(args.tracking_uri)
    except Exception as exc:
        print(f"error: --tracking-uri {redact(args.tracking_uri)}: tracking server unreachable ({first_line(exc)})",
              file=sys.stderr)
        return 2
    out, t0 = Console(width=console_width(), highlight=False, soft_wrap=False), time.monotonic()
    try:
        owed.collect_into(args.tracking_uri, args.experiment, print)  # what a killed runner left unrecorded
        store = StoreReader(args.tracking_uri)
        if args.history is not None:
            return show_history(args, store, out)
        comp = compared(args, store)
    except LookupError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except Exception as exc:  # the store: unreadable file, unreachable server
        print(f"error: --tracking-uri {redact(args.tracking_uri)}: store not readable ({first_line(exc)})",
              file=sys.stderr)
        return 2
    folder = Path(args.out) / run_stamp()
    try:
        files = report.write(comp, folder)
    except BaseException:  # an interrupt or a fault while it is written: no half-written (or empty) report left
        shutil.rmtree(folder, ignore_errors=True)
        raise
    show(out, comp)
    run_id = conclude.record(args, comp, files, folder) if args.record else None
    print(f"compare: {folder / 'compare.html'} ({time.monotonic() - t0:.1f} s)")  # a path: never folded
    if run_id:
        print(f"mlflow: run {run_id} (A and B in its tags bench.compared_a, bench.compared_b)")
    if honour() is not None:  # a signal held off while it recorded
        print(f"compare: {interrupt_reason()}: its run is recorded, ended KILLED", file=sys.stderr)
        return EXIT_INTERRUPTED
    return EXIT_GATE if comp.failed else 0


def compared(args: CompareSettings, store: StoreReader) -> conclude.Compared:
    if args.latest is not None:
        a, b = lookup.latest(store, args.experiment, lookup.this_machine(collect()), args.latest)
    else:
        a, b = (lookup.figures_of(store, args.experiment, given) for given in args.runs)
    if a.run.run_id == b.run.run_id:  # one run named two ways (its id, its run directory): never 'independent'
        raise LookupError(f"A ({args.runs[0]}) and B ({args.runs[1]}) are the same run {a.run.run_id}: give two runs")
    return conclude.compare(a, b, args.noise_pct, args.gate)


def show(out: Console, comp: conclude.Compared) -> None:
    """The console's view: the runs, the set-up, the figures (within the console's width), marks, the gate."""
    out.print(f"compare: A = {comp.a.label}, B = {comp.b.label} ({comp.a.kind}; noise band ±{comp.noise_pct:g} %)")
    if comp.setup:
        out.print(report.console_table("set-up: what differs", report.SETUP_HEADERS, report.setup_rows(comp)))
    else:
        out.print("set-up: same set-up")
    if comp.a.answers or comp.b.answers:
        out.print(report.console_table("the sizing's answers", ("line", "A", "B", ""), report.answer_rows(comp)))
    if comp.changes:
        out.print(report.console_table("figures: B / A", report.FIGURE_HEADERS, report.figure_rows(comp),
                             caption=report.CAPTION))
    for line in report.mark_lines(comp):
        out.print(f"marked: {line}")
    if comp.gate:
        for line in report.gate_lines(comp) or [f"passed: no figure slower by more than {comp.gate[7:]} %"]:
            out.print(f"--fail-on {comp.gate}: {line}")
        if comp.noise_pct > float(comp.gate[7:]):  # inside the band is "no change", never gated: said, not silent
            out.print(f"note: --noise {comp.noise_pct:g} is wider than --fail-on {comp.gate}'s {comp.gate[7:]} %: a "
                      f"figure fails the gate only once it lies outside the ±{comp.noise_pct:g} % band")


def show_history(args: CompareSettings, store: StoreReader, out: Console) -> int:
    machine = lookup.this_machine(collect())
    points = history.history(list(lookup.machine_runs(store, args.experiment, machine)), args.history)
    if not points:
        raise LookupError(f"--history {args.history!r}: no run of this machine holds that figure (its name as "
                          "compare lists it, e.g. 'cpu / mnist-torch images/s')")
    folder = Path(args.out) / run_stamp()
    files = history.write_history(points, args.history, folder)
    out.print(report.console_table(f"history of {args.history}: {len(points)} run(s)", history.HISTORY_HEADERS,
                         history.history_rows(points)))
    print(f"history: {files[-1]}\n  and {files[0]}")  # a path a line: never folded inside one
    return 0
