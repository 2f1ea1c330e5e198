"""``make catalog DIR=<folder of bundles>`` (``python -m suites catalog DIR``): a static site (``<--out>/index.html``,
no server needed) that lists every bundle in DIR with its system and verdict, beside the reference study's published
figures, and sets the figures people compare across sites side by side with their intervals; results that are not
compliant apart and marked. A file in DIR that is no readable bundle is listed as not read, with why (a warning
line), never the end of the catalog."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from suites.bundle import Bundle, BundleError, read
from suites.errors import ConfigError
from suites.publish import catalog_problem, entries_of, is_reference, reference_document, write_site
from suites.record.outdirs import require_output_dir

OUT = "outputs/catalog"
SUFFIXES = (".bundle.tar.gz", ".json")
MAX_BUNDLES = 200
MAX_PLOT_BYTES = 256 * 2**20  # every bundle's plots together: what one page may carry


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m suites catalog", description=__doc__.split("\n\n")[0])
    ap.add_argument("dir", metavar="DIR", help="a folder of .bundle.tar.gz (or bundle .json) files")
    ap.add_argument("--out", default=OUT, help=f"where the site goes ({OUT})")
    ap.add_argument("--no-reference", action="store_true", help="leave the reference study out")
    args = ap.parse_args(argv)
    folder = Path(args.dir)
    try:
        if not args.dir.strip():  # `make catalog DIR=`: Path("") would be the folder "." (this checkout)
            raise ConfigError("DIR is empty: give the folder that holds the bundles")
        if not folder.is_dir():
            raise ConfigError(f"DIR={args.dir}: not a folder (give the folder that holds the bundles)")
        require_output_dir(args.out, "--out")
        problem = catalog_problem(Path(args.out))
        if problem:
            raise ConfigError(f"--out {args.out}: {problem}")
        files = sorted(p for p in folder.iterdir() if p.name.endswith(SUFFIXES))
        if len(files) > MAX_BUNDLES:
            raise ConfigError(f"DIR={args.dir}: {len(files)} bundles, more than the {MAX_BUNDLES} one page shows")
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    bundles = [] if args.no_reference else [Bundle(reference_document(), {}, "the reference study")]
    refused = []
    plot_bytes = 0
    for path in files:
        try:
            got = read(path)
            plot_bytes += sum(map(len, got.plots.values()))
            if plot_bytes > MAX_PLOT_BYTES:
                raise BundleError(f"{path}: its plots take the catalog past {MAX_PLOT_BYTES // 2**20} MiB of plots")
        except BundleError as exc:
            refused.append(str(exc))
            print(f"warning: not in the catalog: {exc}", file=sys.stderr)
            continue
        if not args.no_reference and is_reference(got.doc):  # make publish --reference's file: listed once
            print(f"note: {path}: the reference study as this suite ships it: listed once", file=sys.stderr)
            continue
        bundles.append(got)
    entries = entries_of(bundles)
    index = write_site(entries, refused, Path(args.out))
    good = sum(x.compliant for x in entries)
    print(f"catalog: {index} ({len(entries)} bundle(s): {good} compliant or published, {len(entries) - good} not "
          f"compliant{f', {len(refused)} not read' if refused else ''})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
