"""``python -m suites sync --from FALLBACK --to SERVER``: import runs recorded while a store was down;
``--run-dir DIR``: import a run tree exported to files (a study directory brought back from a GPU host)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from suites.config.paths import absolute_uri
from suites.config.schema import EXPERIMENT, FALLBACK_TRACKING_URI, TRACKING_URI, experiment_name
from suites.errors import ConfigError, first_line, redact
from suites.record import owed
from suites.record.ingest import import_export, import_runs
from suites.record.outdirs import require_output_dir
from suites.record.store import check_server, local_store, sqlite_path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m suites sync", description=__doc__)
    ap.add_argument("--from", dest="src", default=FALLBACK_TRACKING_URI)
    ap.add_argument("--to", dest="dst", default=TRACKING_URI, help="the tracking server (or store) to import into")
    ap.add_argument("--run-dir", type=Path, help="import the runs exported in this directory (a study directory "
                    "brought back from a GPU host: it holds mlflow-export/) instead of a fallback store")
    ap.add_argument("--experiment", default=EXPERIMENT, type=experiment_name)
    ap.add_argument("--all", dest="every_store", action="store_true",
                    help="also import runs recorded while another store was down (default: only --to's)")
    args = ap.parse_args(argv)
    dst = absolute_uri(args.dst, Path.cwd())  # as the runner wrote it: relative paths resolved
    db = sqlite_path(dst)
    try:  # a local target store (and its artifacts beside it) is written as any output folder is
        if db is not None:
            require_output_dir(db.parent, "--to")
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    dst = local_store(dst)
    try:  # an unreachable target is one line within seconds, even with nothing to import
        check_server(dst)
    except Exception as exc:
        print(f"error: --to {redact(args.dst)}: tracking server unreachable ({first_line(exc)})", file=sys.stderr)
        return 2
    try:  # what a runner killed outright left unrecorded in this store (suites/record/owed.py)
        owed.collect_into(dst, args.experiment, print)
    except Exception as exc:
        print(f"error: import into {redact(args.dst)} failed: {first_line(exc)}", file=sys.stderr)
        return 2
    if args.run_dir is not None:
        return import_directory(args.run_dir, dst, args.experiment)
    src = absolute_uri(args.src, Path.cwd())
    src_db = sqlite_path(src)
    if src_db is not None and src_db.is_file() and not is_sqlite(src_db):
        print(f"error: --from {args.src}: {src_db} is not an MLflow store (no SQLite header: truncated or another "
              "file?); nothing imported", file=sys.stderr)
        return 2
    try:
        result = import_runs(local_store(src), dst, args.experiment, args.every_store)
    except Exception as exc:
        print(f"error: import into {redact(args.dst)} failed: {first_line(exc)}", file=sys.stderr)
        return 2
    for old, new in result.done:
        print(f"imported {old} -> {new}")
    print(f"{len(result.done)} run(s) imported from {redact(args.src)} into {redact(args.dst)}")
    if result.left:
        stores = ", ".join(f"{store} ({n})" for store, n in sorted(result.left.items()))
        print(f"{sum(result.left.values())} run(s) left in {redact(args.src)} for other stores: {stores}; import "
              "each with --to <that store>, or all here with --all")
    return 0


LINE_MAX = 300  # an error line, whole


def is_sqlite(path: Path) -> bool:
    with path.open("rb") as f:
        return f.read(16) == b"SQLite format 3\0"


def import_directory(folder: Path, dst: str, experiment: str) -> int:
    try:
        result = import_export(folder, dst, experiment)
    except (OSError, ValueError, KeyError) as exc:
        said = first_line(exc, limit=LINE_MAX)  # names the file and the field
        print(f"error: {said if str(folder) in said else f'{folder}: {said}'}"[:LINE_MAX], file=sys.stderr)
        return 2
    except Exception as exc:
        print(f"error: import into {redact(dst)} failed, nothing of it kept: {first_line(exc)}"[:LINE_MAX],
              file=sys.stderr)
        return 2
    if result.left:
        print(f"{folder}: already imported into {redact(dst)}; nothing copied")
    for old, new in result.done:
        print(f"imported {old} -> {new} (with every run nested below it) into {redact(dst)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
