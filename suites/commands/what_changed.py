"""``make compare A=<run> B=<run>`` (``python -m suites compare A B``): what changed between two runs of one kind
(bench, comparison, study, sizing), and is it more than noise? The set-up differences, then every figure both hold
with B / A, its 95 % interval and a verdict (or the marks that keep one off it); ``--fail-on slower:5`` exits 1
where a figure is slower by more than 5 % at its interval's bound, for a nightly job; ``--history <figure>`` that
figure over this machine's runs. The report (md, html, png) in ``<--out>/<time>/`` and on one MLflow run that names
A and B."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from rich.console import Console

from gpu_probe.inventory import collect
from suites import store_keys as keys
from suites.changes import document, history, lookup, verdicts
from suites.changes.figures import KINDS, read
from suites.config.compose import compose
from suites.config.schema import EXPERIMENT, TRACKING_URI, experiment_name, register_configs, run_stamp
from suites.errors import ConfigError, first_line, redact
from suites.record import mlflow_runs, owed
from suites.record.outdirs import require_output_dir
from suites.record.recorder import Recorder
from suites.record.store import cap_retries, check_server, missing_store
from suites.record.store_reader import StoreReader
from suites.render.tables import console_width
from suites.run.shield import Shield

EXIT_GATE = 1  # --fail-on: a figure past its rule


def arguments() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m suites compare", description=__doc__)
    ap.add_argument("runs", nargs="*", metavar="RUN", help="A and B: MLflow run ids or run directories")
    ap.add_argument("--latest", nargs="?", const="", metavar="KIND",
                    help=f"the two newest runs of KIND ({', '.join(KINDS)}; default: the newest run's) of this machine")
    ap.add_argument("--history", metavar="FIGURE", help="that figure over this machine's runs (its name as listed)")
    ap.add_argument("--fail-on", metavar="RULE", help="slower:<percent>: exit 1 where a figure is slower by more")
    ap.add_argument("--noise", type=float, default=5.0, metavar="PCT", help="the no-change band, +-PCT %% (5)")
    ap.add_argument("--tracking-uri", default=TRACKING_URI)
    ap.add_argument("--experiment", default=EXPERIMENT, type=experiment_name)
    ap.add_argument("--out", default="outputs/compare", help="the report goes to <out>/<time>/")
    ap.add_argument("--no-record", action="store_true", help="no MLflow run of the comparison")
    return ap


MIN_NOISE_PCT = 0.01


def checked(args: argparse.Namespace) -> verdicts.Gate | None:
    """The command line as given, before any store is opened: one ConfigError line."""
    given, latest, hist = len(args.runs), args.latest is not None, args.history is not None
    if hist and (given or latest):
        raise ConfigError("--history FIGURE reads this machine's runs itself: give no RUN or --latest beside it")
    if latest and given:
        raise ConfigError("--latest takes the two newest runs itself: give no RUN beside it")
    if not (hist or latest) and given != 2:
        raise ConfigError(f"give two runs (A B), or --latest [KIND], or --history FIGURE (got {given} run(s))")
    if not MIN_NOISE_PCT <= args.noise < 100:  # a band of 1e-200 % overflowed the interval's arithmetic
        raise ConfigError(f"--noise {args.noise:g}: a band in [{MIN_NOISE_PCT:g}, 100) %")
    if given == 2 and args.runs[0] == args.runs[1]:
        raise ConfigError(f"A and B are the same run ({args.runs[0]}): give two runs")
    require_output_dir(args.out, "--out")
    try:
        return verdicts.parse_gate(args.fail_on) if args.fail_on else None
    except ValueError as exc:
        raise ConfigError(str(exc)) from None


def main(argv: list[str] | None = None) -> int:
    args = arguments().parse_args(argv)
    try:
        rule = checked(args)
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
        comp = compared(args, store, rule)
    except LookupError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except Exception as exc:  # the store: unreadable file, unreachable server
        print(f"error: --tracking-uri {redact(args.tracking_uri)}: store not readable ({first_line(exc)})",
              file=sys.stderr)
        return 2
    folder = Path(args.out) / run_stamp()
    files = document.write(comp, folder)
    show(out, comp)
    run_id = None if args.no_record else record(args, comp, files, folder)
    print(f"compare: {folder / 'compare.html'} ({time.monotonic() - t0:.1f} s)")  # a path: never folded
    if run_id:
        print(f"mlflow: run {run_id} (A and B in its tags bench.compared_a, bench.compared_b)")
    return EXIT_GATE if comp.failed else 0


def compared(args: argparse.Namespace, store: StoreReader, rule: verdicts.Gate | None) -> document.Comparison:
    if args.latest is not None:
        a, b = lookup.latest(store, args.experiment, lookup.this_machine(collect()), args.latest)
    else:
        a, b = (read(store, lookup.resolve(store, args.experiment, given)) for given in args.runs)
    return lookup.compare(a, b, args.noise, rule)


def show(out: Console, comp: document.Comparison) -> None:
    """The console's view: the runs, the set-up, the figures (within the console's width), marks, the gate."""
    out.print(f"compare: A = {comp.a.label}, B = {comp.b.label} ({comp.a.kind}; noise band ±{comp.noise_pct:g} %)")
    if comp.setup:
        out.print(document.console_table("set-up: what differs", document.SETUP_HEADERS, document.setup_rows(comp)))
    else:
        out.print("set-up: same set-up")
    if comp.a.answers or comp.b.answers:
        out.print(document.console_table("the sizing's answers", ("line", "A", "B", ""), document.answer_rows(comp)))
    if comp.changes:
        out.print(document.console_table("figures: B / A", document.FIGURE_HEADERS, document.figure_rows(comp),
                             caption=document.CAPTION))
    for line in document.mark_lines(comp):
        out.print(f"marked: {line}")
    if comp.gate:
        for line in document.gate_lines(comp) or [f"passed: no figure slower by more than {comp.gate[7:]} %"]:
            out.print(f"--fail-on {comp.gate}: {line}")
        if comp.noise_pct > float(comp.gate[7:]):  # inside the band is "no change", never gated: said, not silent
            out.print(f"note: --noise {comp.noise_pct:g} is wider than --fail-on {comp.gate}'s {comp.gate[7:]} %: a "
                      f"figure fails the gate only once it lies outside the ±{comp.noise_pct:g} % band")


def show_history(args: argparse.Namespace, store: StoreReader, out: Console) -> int:
    machine = lookup.this_machine(collect())
    points = history.history(list(lookup.machine_runs(store, args.experiment, machine)), args.history)
    if not points:
        raise LookupError(f"--history {args.history!r}: no run of this machine holds that figure (its name as "
                          "compare lists it, e.g. 'cpu / mnist-torch images/s')")
    folder = Path(args.out) / run_stamp()
    files = history.write_history(points, args.history, folder)
    out.print(document.console_table(f"history of {args.history}: {len(points)} run(s)", history.HISTORY_HEADERS,
                         history.history_rows(points)))
    print(f"history: {files[-1]}\n  and {files[0]}")  # a path a line: never folded inside one
    return 0


def record(args: argparse.Namespace, comp: document.Comparison, files: list[Path], folder: Path) -> str | None:
    """One MLflow run of the comparison, naming A and B, its report as artifacts (its fallback store where this
    one fails, as every record)."""
    register_configs()
    cfg, _ = compose([f"tracking_uri={args.tracking_uri}", f"experiment={args.experiment}"])
    recorder = Recorder(cfg, lambda line: print(line, file=sys.stderr))
    metrics = {f"{c.name}.ratio": c.ratio.median for c in comp.changes if c.ratio.median == c.ratio.median}
    counts = {f"verdicts.{v}": float(sum(c.verdict.split(" (")[0] == v for c in comp.changes))
              for v in ("faster", "slower", "no change", "inconclusive", "no spread", verdicts.MARKED)}
    params = {"a": comp.a.run.run_id, "b": comp.b.run.run_id, "kind": comp.a.kind, "noise_pct": comp.noise_pct,
              "fail_on": comp.gate or "-", "setup_differences": len(comp.setup)}
    ref = None
    try:  # a second of store writes: an interrupt waits for them (a third press ends the run KILLED, never RUNNING)
        with Shield(recorder.say, "recording the comparison"):
            ref = recorder.start_parent(f"compare-{folder.name}", {
                keys.ROLE: "compare", keys.KIND: "compare", keys.COMPARED_A: comp.a.run.run_id,
                keys.COMPARED_B: comp.b.run.run_id})
            ref = recorder.parent_results(ref, mlflow_runs.ParentResults(
                params, {**metrics, **counts}, {keys.STATUS: "failed" if comp.failed else "ok"}), folder)
            recorder.finish(ref, files, "FINISHED")
    except BaseException:  # given up, or a fault: ended KILLED under a shield no further signal can break
        with Shield(recorder.say, "ending the comparison's run KILLED", give_up=None):
            recorder.finish(ref, [], "KILLED")
        raise
    return ref.run_id if ref is not None else None
