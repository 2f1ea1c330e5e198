"""``make report``: the mixed and consolidation scenarios read back from the MLflow store, as Markdown + HTML + PNGs;
``--study``: the latest ``make study`` report instead."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from rich.console import Console

from suites.config.paths import absolute_uri
from suites.config.schema import EXPERIMENT, FALLBACK_TRACKING_URI, TRACKING_URI, experiment_name
from suites.errors import ConfigError, first_line, redact
from suites.record import owed, reader
from suites.record.export import RUN_ID
from suites.record.outdirs import require_output_dir
from suites.record.store import cap_retries, missing_store, sqlite_path
from suites.render import mixed_report
from suites.render.tables import console_width, fold_line
from suites.study import banner, console_table, latest_study, read_study, write_report


def main(argv: list[str] | None = None) -> int:
    """Every way it can fail is one ``error:`` line and exit 2: a run id that is not there or not of its kind,
    a store that cannot be read (within MLflow's capped retries: seconds, not minutes)."""
    ap = argparse.ArgumentParser(prog="python -m suites report", description=__doc__)
    ap.add_argument("--tracking-uri", default=TRACKING_URI)
    ap.add_argument("--experiment", default=EXPERIMENT, type=experiment_name)
    ap.add_argument("--out", default="outputs/report")
    ap.add_argument("--mixed-run", help="comparison run id (default: the latest mixed run)")
    ap.add_argument("--consolidation-run", help="comparison run id (default: the latest consolidation run)")
    ap.add_argument("--study", nargs="?", const="latest", metavar="RUN_ID",
                    help="the make study report instead (default: the latest study run), into --out")
    args = ap.parse_args(argv)
    try:  # what the command line says is checked before any store is opened
        require_report_dir(args.out)
        for flag, given in (("--mixed-run", args.mixed_run), ("--consolidation-run", args.consolidation_run),
                            ("--study", args.study if args.study != "latest" else None)):
            if given is not None and not RUN_ID.match(given):
                raise ConfigError(f"{flag} {given[:80]!r}: not an MLflow run id (32 hex digits); leave it out for "
                                  "the latest run")
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    cap_retries(args.tracking_uri)
    missing = missing_store(args.tracking_uri)
    if missing:
        print(f"error: --tracking-uri {args.tracking_uri}: {missing} (make bench records into {TRACKING_URI})",
              file=sys.stderr)
        return 2
    try:
        owed.collect_into(args.tracking_uri, args.experiment, print)  # what a killed runner left unrecorded
        return write(args)
    except LookupError as exc:
        print(f"error: {exc}", file=sys.stderr)
    except Exception as exc:  # the store: unreachable server, unreadable file, refused credentials
        print(f"error: --tracking-uri {redact(args.tracking_uri)}: store not readable ({first_line(exc)})"
              f"{fallback_hint(args.tracking_uri)}", file=sys.stderr)
    return 2


REPORT_FILES = ("report.md", "report.html")  # what marks a folder a report's own (mixed_report, study writeup)


def require_report_dir(out: str) -> None:
    """--out is written as any output folder is (named, outside the source tree, writable), and never over
    another command's files: an existing folder must be empty or a report's own (a run directory's results stay)."""
    require_output_dir(out, "--out")
    folder = Path(out)
    held = sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []
    if held and not any(name in held for name in REPORT_FILES):
        raise ConfigError(f"--out {out}: holds {', '.join(held[:3])}{' ...' if len(held) > 3 else ''}, not a "
                          "report; give a new folder or a report's own (default outputs/report)")


def fallback_hint(uri: str) -> str:
    """Where bench's runs went while that store was down, if there are any (its fallback store)."""
    fallback = absolute_uri(FALLBACK_TRACKING_URI, Path.cwd())
    db = sqlite_path(fallback)
    if fallback == uri or db is None or not db.is_file():
        return ""
    return f"; runs recorded while a store was down are in the fallback store: --tracking-uri {fallback}"


def write(args: argparse.Namespace) -> int:
    if args.study:
        return study(args.tracking_uri, args.experiment, args.study, Path(args.out))
    rep = reader.build(args.tracking_uri, args.experiment, args.mixed_run, args.consolidation_run)
    if not rep.sources:
        print(f"error: no mixed or consolidation run in {args.tracking_uri} (run: make bench scenario=mixed)",
              file=sys.stderr)
        return 2
    files = mixed_report.write(rep, Path(args.out))
    summary(mixed_report.console_tables(rep), banner=mixed_report.banner(rep))
    print(fold_line(f"report: {files[1]} (and {', '.join(f.name for f in files if f != files[1])})"))
    return 0


def summary(tables: list[Any], banner: str | None = None) -> None:
    """The report's tables as the console shows them (within 120 columns, each cell folded between words), not its
    whole Markdown (whose rows run to hundreds of columns on a terminal): the files hold the rest."""
    out = Console(width=console_width())
    if banner:
        out.print(banner, markup=False, highlight=False)
    for t in tables:
        out.print(t)


def study(tracking_uri: str, experiment: str, run_id: str, out: Path) -> int:
    """``make report ARGS=--study``: a study's report rebuilt from the store alone."""
    found = latest_study(tracking_uri, experiment) if run_id == "latest" else run_id
    if not found:
        print(f"error: no study run in {tracking_uri} (run: make study)", file=sys.stderr)
        return 2
    result = read_study(tracking_uri, experiment, found)
    files = write_report(result, out)
    summary([console_table(result)], banner=banner(result))
    print(fold_line(f"report: {files[1]} (and {', '.join(f.name for f in files if f != files[1])})"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
