"""``make publish RUN=<run id or run directory>`` (``python -m suites publish RUN``): the run a person launched (a
bench run, a comparison, a mixed run or consolidation, a study, a sizing) as one result bundle in ``--out``
(``<kind>-<name>-<id>.bundle.tar.gz``: its document, raw repeats and plots), judged by the run rules
(docs/run-rules.md), each rule's verdict said. ``--reference`` writes the reference study's bundle instead (its
published figures). A bundle that is not compliant is still written: its verdict says so, and so does the catalog.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from suites.bundle import write
from suites.config.schema import EXPERIMENT, TRACKING_URI, experiment_name
from suites.errors import ConfigError, first_line, redact
from suites.publish import publish, reference_document, verdict_lines, verdict_of
from suites.record.outdirs import require_output_dir
from suites.record.store import check_server, missing_store
from suites.record.store_reader import StoreReader

OUT = "outputs/bundles"


def arguments() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m suites publish", description=__doc__.split("\n\n")[0])
    ap.add_argument("run", nargs="?", metavar="RUN", help="an MLflow run id, or the run directory a run wrote")
    ap.add_argument("--reference", action="store_true", help="the reference study's bundle (its published figures)")
    ap.add_argument("--tracking-uri", default=TRACKING_URI)
    ap.add_argument("--experiment", default=EXPERIMENT, type=experiment_name)
    ap.add_argument("--out", default=OUT, help=f"the folder the bundle goes to ({OUT})")
    return ap


def main(argv: list[str] | None = None) -> int:
    args = arguments().parse_args(argv)
    try:
        if bool(args.run) == args.reference:
            raise ConfigError("give RUN (a run id or run directory), or --reference, not both")
        require_output_dir(args.out, "--out")
        if args.reference:
            path = write(reference_document(), {}, Path(args.out) / "reference-study.bundle.tar.gz")
            print(f"publish: {path} (the reference study: published by its authors, not measured by this suite)")
            return 0
        missing = missing_store(args.tracking_uri)
        if missing:
            raise ConfigError(f"--tracking-uri {redact(args.tracking_uri)}: {missing}")
        check_server(args.tracking_uri)
        path, verdicts = publish(StoreReader(args.tracking_uri), args.experiment, args.run, Path(args.out))
    except (ConfigError, LookupError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except Exception as exc:  # the store: unreadable, unreachable
        print(f"error: --tracking-uri {redact(args.tracking_uri)}: {first_line(exc)}", file=sys.stderr)
        return 2
    print(f"publish: {path}")
    print(*verdict_lines(verdicts), sep="\n")
    print(f"verdict: {verdict_of(verdicts)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
