"""``make report``: the mixed-workload study read back from the MLflow store, as Markdown + HTML + PNGs."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from suites.config.schema import EXPERIMENT, TRACKING_URI
from suites.record import reader
from suites.render import report


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m suites.app.report", description=__doc__)
    ap.add_argument("--tracking-uri", default=TRACKING_URI)
    ap.add_argument("--experiment", default=EXPERIMENT)
    ap.add_argument("--out", default="outputs/report")
    ap.add_argument("--mixed-run", help="comparison run id (default: the latest mixed run)")
    ap.add_argument("--consolidation-run", help="comparison run id (default: the latest consolidation run)")
    args = ap.parse_args(argv)
    rep = reader.build(args.tracking_uri, args.experiment, args.mixed_run, args.consolidation_run)
    if not rep.sources:
        print(f"error: no mixed or consolidation run in {args.tracking_uri} (run: make bench scenario=mixed)",
              file=sys.stderr)
        return 2
    files = report.write(rep, Path(args.out))
    print(report.markdown(rep, []))
    print(f"report: {files[1]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
