"""``make report``: the mixed-workload study read back from the MLflow store, as Markdown + HTML + PNGs;
``--study``: the latest ``make study`` report instead."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from suites.config.schema import EXPERIMENT, TRACKING_URI
from suites.record import reader
from suites.render import report, study_report


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m suites.app.report", description=__doc__)
    ap.add_argument("--tracking-uri", default=TRACKING_URI)
    ap.add_argument("--experiment", default=EXPERIMENT)
    ap.add_argument("--out", default="outputs/report")
    ap.add_argument("--mixed-run", help="comparison run id (default: the latest mixed run)")
    ap.add_argument("--consolidation-run", help="comparison run id (default: the latest consolidation run)")
    ap.add_argument("--study", nargs="?", const="latest", metavar="RUN_ID",
                    help="the make study report instead (default: the latest study run), into --out")
    args = ap.parse_args(argv)
    if args.study:
        return study(args.tracking_uri, args.experiment, args.study, Path(args.out))
    rep = reader.build(args.tracking_uri, args.experiment, args.mixed_run, args.consolidation_run)
    if not rep.sources:
        print(f"error: no mixed or consolidation run in {args.tracking_uri} (run: make bench scenario=mixed)",
              file=sys.stderr)
        return 2
    files = report.write(rep, Path(args.out))
    print(report.markdown(rep, []))
    print(f"report: {files[1]}")
    return 0


def study(tracking_uri: str, experiment: str, run_id: str, out: Path) -> int:
    """``make report ARGS=--study``: a study's report rebuilt from the store alone."""
    found = reader.latest_study(tracking_uri, experiment) if run_id == "latest" else run_id
    if not found:
        print(f"error: no study run in {tracking_uri} (run: make study)", file=sys.stderr)
        return 2
    result = reader.of_study(tracking_uri, experiment, found)
    files = study_report.write(result, out)
    print(study_report.markdown(result, []))
    print(f"report: {files[1]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
