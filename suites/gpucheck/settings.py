"""``make gpu-check``'s settings: its ``key=value`` arguments (``data.root``, ``budget_s``, ``only``, ``out_dir``,
``strict``, ``started_at``) read and checked before anything starts; a bad one is one
:class:`~suites.errors.ConfigError`."""

from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass, field

from suites.errors import ConfigError

__all__ = ["BUDGET_S", "KEYS", "PRIORITY", "GpuCheckSettings", "parse"]

BUDGET_S = 540.0  # the whole command: 9 minutes, within a lent GPU's 10-minute call with its set-up and tarball
# The order checks run in: what matters most first, so a budget that runs out cuts the least (each cut said).
PRIORITY = ("a", "b1", "c1", "c2", "c3", "d", "e", "b3", "b2", "g", "i", "j", "l", "k", "h", "f")
KEYS = ("data.root", "budget_s", "only", "out_dir", "strict", "started_at")
CLOCK_SKEW_S = 5.0  # a started_at this far ahead of this host's clock is another clock's rounding, not the future


@dataclass(frozen=True)
class GpuCheckSettings:
    """What one gpu-check was asked for."""

    data_root: str | None = None  # real MNIST for checks b1 and c3 (default $BENCH_DATA_ROOT)
    budget_s: float = BUDGET_S  # the whole command, from its start
    only: list[str] = field(default_factory=list)  # a subset of the checks (every one where empty)
    out_dir: str = "outputs/gpu-check"
    strict: bool = False  # a host without a GPU is an error, and any skipped check fails the command
    # epoch seconds budget_s counts from: the device call's start (its set-up included), as the call says it
    # (started_at=$(date +%s) as its first line); unset: the command's own start
    started_at: float | None = None


def parse(argv: list[str]) -> GpuCheckSettings:
    """``key=value`` arguments; anything else is one ConfigError."""
    args: dict[str, str | None] = {"data.root": os.environ.get("BENCH_DATA_ROOT"), "budget_s": str(BUDGET_S),
                                   "only": "", "out_dir": "outputs/gpu-check", "strict": "false"}
    for a in argv:
        key, eq, value = a.partition("=")
        if not eq or key not in KEYS:
            raise ConfigError(f"gpu-check: unknown argument {a!r} (keys: {', '.join(KEYS)})")
        args[key] = value
    try:
        budget_s = float(str(args["budget_s"]))
    except ValueError:
        raise ConfigError(f"gpu-check: budget_s must be seconds, got {args['budget_s']!r}") from None
    if not math.isfinite(budget_s) or budget_s <= 0:
        raise ConfigError(f"gpu-check: budget_s must be a positive number of seconds, got {budget_s}")
    if str(args["strict"]).lower() not in ("true", "false"):
        raise ConfigError(f"gpu-check: strict must be true or false, got {args['strict']!r}")
    only = [c for c in str(args["only"]).split(",") if c]
    unknown = [c for c in only if c not in PRIORITY]
    if unknown:
        raise ConfigError(f"gpu-check: only= names unknown checks {', '.join(unknown)} "
                          f"(known: {', '.join(PRIORITY)})")
    strict = str(args["strict"]).lower() == "true"
    started = call_start(args.get("started_at"), budget_s)
    return GpuCheckSettings(args["data.root"], budget_s, only, str(args["out_dir"]), strict, started)


def call_start(value: str | None, budget_s: float) -> float | None:
    """``started_at``: an epoch second within budget_s before now (the call's set-up left some of it), never ahead of
    this host's clock; None where not given."""
    if value is None:
        return None
    try:
        started = float(value)
    except ValueError:
        raise ConfigError(f"gpu-check: started_at must be epoch seconds (date +%s), got {value!r}") from None
    ago = time.time() - started if math.isfinite(started) else math.nan
    if not ago >= -CLOCK_SKEW_S:
        raise ConfigError(f"gpu-check: started_at={value} is not a time before now (epoch seconds, date +%s)")
    if ago >= budget_s:
        raise ConfigError(f"gpu-check: started_at={value} began {ago:.0f} s ago: budget_s={budget_s:g} from it is "
                          "spent before any check")
    return started
