"""``make compare``'s settings: its command line (two runs, or ``--latest [KIND]``, or ``--history FIGURE``; the noise
band, the nightly gate, the store, where the report goes) read and checked before any store is opened; a bad one is
one :class:`~suites.errors.ConfigError` (argparse's own usage errors exit 2 as argparse does)."""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass

from gpu_probe.stats import NOISE_PCT, SLOWER
from suites.config.schema import EXPERIMENT, TRACKING_URI, experiment_name
from suites.errors import ConfigError
from suites.record.outdirs import require_output_dir
from suites.run_kinds import LAUNCHED

__all__ = ["MIN_NOISE_PCT", "CompareSettings", "Gate", "arguments", "parse", "parse_gate"]

MIN_NOISE_PCT = 0.01


@dataclass(frozen=True)
class Gate:
    """``--fail-on slower:5``: exit 1 where a figure is slower by more than ``pct`` % by its interval's bound."""

    what: str
    pct: float


def parse_gate(text: str) -> Gate:
    """``slower:5`` -> Gate('slower', 5.0); ValueError with what is accepted otherwise."""
    what, _, pct = text.partition(":")
    try:
        value = float(pct)
    except ValueError:
        value = math.nan
    if what != SLOWER or not math.isfinite(value) or value < 0:
        raise ValueError(f"--fail-on {text!r}: give slower:<percent>, e.g. --fail-on slower:5")
    return Gate(what, value)


@dataclass(frozen=True)
class CompareSettings:
    """What one compare was asked for."""

    runs: list[str]  # A and B: MLflow run ids or run directories (none with --latest or --history)
    latest: str | None  # --latest [KIND]: '' for the newest run's kind; None where not asked
    history: str | None  # --history FIGURE
    gate: Gate | None  # --fail-on slower:<percent>
    noise_pct: float
    tracking_uri: str
    experiment: str
    out: str  # the report goes to <out>/<time>/
    record: bool  # one MLflow run of this make compare


def arguments() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m suites compare", description="what changed between two runs")
    ap.add_argument("runs", nargs="*", metavar="RUN", help="A and B: MLflow run ids or run directories")
    ap.add_argument("--latest", nargs="?", const="", metavar="KIND",
                    help=f"the two newest runs of KIND ({', '.join(LAUNCHED)}; default: the newest run's) of this "
                    "machine")
    ap.add_argument("--history", metavar="FIGURE", help="that figure over this machine's runs (its name as listed)")
    ap.add_argument("--fail-on", metavar="RULE", help="slower:<percent>: exit 1 where a figure is slower by more")
    ap.add_argument("--noise", type=float, default=NOISE_PCT, metavar="PCT",
                    help=f"the no-change band, +-PCT %% ({NOISE_PCT:g})")
    ap.add_argument("--tracking-uri", default=TRACKING_URI)
    ap.add_argument("--experiment", default=EXPERIMENT, type=experiment_name)
    ap.add_argument("--out", default="outputs/compare", help="the report goes to <out>/<time>/")
    ap.add_argument("--no-record", action="store_true", help="no MLflow run of this make compare")
    return ap


def parse(argv: list[str] | None, description: str = "") -> CompareSettings:
    """The command line as given, before any store is opened: one ConfigError line."""
    ap = arguments()
    ap.description = description or ap.description
    args = ap.parse_args(argv)
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
        gate = parse_gate(args.fail_on) if args.fail_on else None
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    return CompareSettings(list(args.runs), args.latest, args.history, gate, args.noise, args.tracking_uri,
                           args.experiment, args.out, not args.no_record)
