"""``make gpu-check``'s settings: its ``key=value`` arguments (``data.root``, ``budget_s``, ``only``, ``out_dir``,
``strict``, ``started_at``) read one way, as the study's and the sizing's (Hydra's override grammar through
:func:`suites.config.own.load_own`, into one frozen dataclass), and checked before anything starts; a bad one is one
:class:`~suites.errors.ConfigError`."""

from __future__ import annotations

import dataclasses
import math
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from suites.config.own import load_own
from suites.errors import ConfigError

__all__ = ["BUDGET_S", "KEYS", "PRIORITY", "DataSettings", "GpuCheckSettings", "parse"]

BUDGET_S = 540.0  # the whole command: 9 minutes, within a lent GPU's 10-minute call with its set-up and tarball
# The order checks run in: what matters most first, so a budget that runs out cuts the least (each cut said).
PRIORITY = ("a", "b1", "c1", "c2", "c3", "d", "e", "b3", "b2", "g", "i", "j", "l", "k", "h", "f")
KEYS = ("data.root", "budget_s", "only", "out_dir", "strict", "started_at")
CLOCK_SKEW_S = 5.0  # a started_at this far ahead of this host's clock is another clock's rounding, not the future


@dataclass(frozen=True)
class DataSettings:
    """``data.root``: where real MNIST lies (``<root>/MNIST/raw``), as ``make bench``'s ``data.root`` says it."""

    root: Optional[str] = field(default=None, metadata={"path": True})  # default: $BENCH_DATA_ROOT, where set


@dataclass(frozen=True)
class GpuCheckSettings:
    """What one gpu-check was asked for."""

    data: DataSettings = field(default_factory=DataSettings)  # real MNIST for checks b1 and c3
    budget_s: float = BUDGET_S  # the whole command, from its start
    only: list[str] = field(default_factory=list)  # a subset of the checks (every one where empty): only=a,b2
    out_dir: str = "outputs/gpu-check"
    strict: bool = False  # a host without a GPU is an error, and any skipped check fails the command
    # epoch seconds budget_s counts from: the device call's start (its set-up included), as the call says it
    # (started_at=$(date +%s) as its first line); unset: the command's own start
    started_at: Optional[float] = None

    @property
    def data_root(self) -> str | None:
        return self.data.root

    def check(self) -> GpuCheckSettings:
        """These settings, checked (one ConfigError naming the key)."""
        if not math.isfinite(self.budget_s) or self.budget_s <= 0:
            raise ConfigError(f"gpu-check: budget_s must be a positive number of seconds, got {self.budget_s}")
        unknown = [str(c) for c in self.only if not isinstance(c, str) or c not in PRIORITY]  # only=[a,[b]]: a list
        if unknown:
            raise ConfigError(f"gpu-check: only= names unknown checks {', '.join(unknown)} "
                              f"(known: {', '.join(PRIORITY)})")
        call_start(self.started_at, self.budget_s)
        return self


def parse(argv: list[str]) -> GpuCheckSettings:
    """``key=value`` arguments in Hydra's override grammar, as the study's and the sizing's (``only=a,b2`` is the list
    ``[a,b2]``); anything else is one ConfigError. ``data.root`` given wins over ``$BENCH_DATA_ROOT``."""
    bare = [a for a in argv if "=" not in a]
    if bare:
        raise ConfigError(f"gpu-check: unknown argument {bare[0]!r} (keys: {', '.join(KEYS)})")
    settings = load_own(GpuCheckSettings, "gpu-check", argv, lists=("only",))
    env = os.environ.get("BENCH_DATA_ROOT")
    return settings if settings.data.root is not None or not env else \
        dataclasses.replace(settings, data=DataSettings(str(Path(env).resolve())))


def call_start(started: float | None, budget_s: float) -> float | None:
    """``started_at``: an epoch second within budget_s before now (the call's set-up left some of it), never ahead of
    this host's clock; None where not given."""
    if started is None:
        return None
    ago = time.time() - started if math.isfinite(started) else math.nan
    if not ago >= -CLOCK_SKEW_S:
        raise ConfigError(f"gpu-check: started_at={started:g} is not a time before now (epoch seconds, date +%s)")
    if ago >= budget_s:
        raise ConfigError(f"gpu-check: started_at={started:.0f} began {ago:.0f} s ago: budget_s={budget_s:g} from it "
                          "is spent before any check")
    return started
