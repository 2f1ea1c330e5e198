"""``make check-results BUNDLE=<file>`` (``python -m suites check-results BUNDLE [BUNDLE ...]``): each bundle judged by
the run rules (docs/run-rules.md), every figure computed again from its raw repeats: each rule's verdict with its
reason, then ``compliant`` or ``not compliant: <rules>``. Exit 0 when every bundle is compliant (or a published
result, which is said and not judged), 1 when one is not, 2 when one cannot be read as a bundle (one ``error:``
line: malformed, oversized, off its schema, an archive with links or paths out of it)."""

from __future__ import annotations

import argparse
import sys

from suites.bundle import BundleError, read
from suites.errors import inert
from suites.publish import COMPLIANT, PUBLISHED, judge, verdict_lines, verdict_of

EXIT_NOT_COMPLIANT = 1


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m suites check-results", description=__doc__.split("\n\n")[0])
    ap.add_argument("bundles", nargs="+", metavar="BUNDLE", help="a .bundle.tar.gz or a bundle.json")
    args = ap.parse_args(argv)
    try:
        bundles = [read(b) for b in args.bundles]
    except BundleError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    worst = 0
    for b in bundles:
        verdicts = judge(b.doc)
        print(f"check-results: {b.source}: {inert(b.title)}")  # a bundle's text never acts on the terminal
        print(*verdict_lines(verdicts), sep="\n")
        verdict = verdict_of(verdicts)
        print(f"verdict: {verdict}")
        if verdict not in (COMPLIANT, PUBLISHED):
            worst = EXIT_NOT_COMPLIANT
    return worst


if __name__ == "__main__":
    sys.exit(main())
