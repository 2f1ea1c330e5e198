"""``make gpu-check``'s settings: its ``key=value`` arguments (``data.root``, ``budget_s``, ``only``, ``out_dir``,
``strict``) read and checked before anything starts; a bad one is one :class:`~suites.errors.ConfigError`."""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field

from suites.errors import ConfigError
from suites.gpucheck.campaign import BUDGET_S, PRIORITY

__all__ = ["KEYS", "GpuCheckSettings", "parse"]

KEYS = ("data.root", "budget_s", "only", "out_dir", "strict")


@dataclass(frozen=True)
class GpuCheckSettings:
    """What one gpu-check was asked for."""

    data_root: str | None = None  # real MNIST for checks b1 and c3 (default $BENCH_DATA_ROOT)
    budget_s: float = BUDGET_S  # the whole command, from its start
    only: list[str] = field(default_factory=list)  # a subset of the checks (every one where empty)
    out_dir: str = "outputs/gpu-check"
    strict: bool = False  # a host without a GPU is an error, and any skipped check fails the command


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
    return GpuCheckSettings(args["data.root"], budget_s, only, str(args["out_dir"]), strict)
