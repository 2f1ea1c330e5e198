"""``make rerun BUNDLE=<file>`` (``python -m suites rerun BUNDLE``): the command a bundle's run was made by, run again
on this host into this host's store, so that ``make compare A=<bundle> B=<the new run>`` says whether its hardware
matches. The command is checked as any input is (``python -m suites bench|study|size`` with the measurement's own
``key=value`` settings only, suites/publish/rerunnable.py: a bundle is data, its command is never handed to a shell),
what it left out said (its data asked for where it trained on real data), printed, then run; ``--print`` only prints
it.
Extra settings after ``--`` are added (``-- tracking_uri=...``)."""

from __future__ import annotations

import argparse
import os
import shlex
import sys

from suites.bundle import BundleError, read
from suites.publish import data_needs, left_out, rerun_command


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m suites rerun", description=__doc__.split("\n\n")[0])
    ap.add_argument("bundle", metavar="BUNDLE", help="a .bundle.tar.gz or a bundle.json")
    ap.add_argument("--print", action="store_true", help="print the command, run nothing")
    ap.add_argument("extra", nargs="*", metavar="KEY=VALUE", help="settings added after the bundle's (after --)")
    args = ap.parse_intermixed_args(argv)  # its settings may follow --print
    try:
        bundle = read(args.bundle)
        words = rerun_command(bundle)
        bad = [w for w in args.extra if "=" not in w or w.startswith("-")]
        if bad:
            raise ValueError(f"{bad[0][:80]!r}: extra settings are key=value")
        added, said = data_needs(bundle.doc["command"], str(bundle.doc["setup"].get("data.source", "")), args.extra)
    except BundleError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except ValueError as exc:
        print(f"error: {args.bundle}: {exc}", file=sys.stderr)
        return 2
    argv_out = [sys.executable, "-m", "suites", *words, *added, *args.extra]
    for key in left_out(bundle.doc["command"]):
        if key != "data.root":
            print(f"rerun: {key} left out of the bundle (it named a place on its host): this host's default",
                  flush=True)
    if said:
        print(f"rerun: {said}", flush=True)
    print(f"rerun: python -m suites {shlex.join([*words, *added, *args.extra])}", flush=True)
    if args.print:
        return 0
    os.execv(sys.executable, argv_out)  # this process becomes the run (as make's own commands do)
    return 0  # not reached


if __name__ == "__main__":
    sys.exit(main())
