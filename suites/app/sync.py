"""``python -m suites.app.sync --from FALLBACK --to SERVER``: import runs recorded while a store was down."""

from __future__ import annotations

import argparse
import sys

from suites.config.schema import EXPERIMENT, FALLBACK_TRACKING_URI
from suites.errors import first_line
from suites.record.sync import import_runs


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m suites.app.sync", description=__doc__)
    ap.add_argument("--from", dest="src", default=FALLBACK_TRACKING_URI)
    ap.add_argument("--to", dest="dst", required=True, help="the tracking server (or store) to import into")
    ap.add_argument("--experiment", default=EXPERIMENT)
    args = ap.parse_args(argv)
    try:
        done = import_runs(args.src, args.dst, args.experiment)
    except Exception as exc:
        print(f"error: import into {args.dst} failed: {first_line(exc)}", file=sys.stderr)
        return 1
    for old, new in done:
        print(f"imported {old} -> {new}")
    print(f"{len(done)} run(s) imported from {args.src} into {args.dst}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
