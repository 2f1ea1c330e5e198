"""``make study``'s own settings (``study.*`` on its command line); every other argument is a bench override.

The reference study (4 x Tesla M60, two episodes) is reproduced as a list of
comparisons (:mod:`suites.study.plan` decides which this host can run);
these settings say how long it may take and what episode 2 sweeps.
"""

from __future__ import annotations

import dataclasses
import json
import math
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from suites.config.own import load_own
from suites.errors import ConfigError, RenamedSetting, require

PREFIX = "study."
TIERS = ("auto", "full", "smoke")
MAX_BUDGET_S = 7 * 86400.0  # a study longer than a week is a typo (1e9 s planned 31 years of full sizes)


@dataclass(frozen=True)
class StudySettings:
    # Seconds the whole study may take, by the planner's estimate: one H100 in 8 minutes. Parts are trimmed until
    # the estimate fits (on a GPU host rows first, full sizes and 3 repeats kept; on a CPU host repeats first); each
    # trim is listed in the report's skip list.
    budget_s: float = 480.0
    # Workload sizes: full (each workload's defaults), smoke (seconds-long; what a CPU host always gets), or auto
    # (full where the budget allows on a GPU host).
    tier: str = "auto"
    repeats: Optional[int] = None  # each comparison's phases, interleaved; unset: 3, fewer if the budget says so
    # Episode 2: the M60 Q profiles the mixed CAD + ML study runs (emulated on whatever NVIDIA GPU is present).
    profiles: list[str] = field(default_factory=lambda: ["m60-8q", "m60-4q", "m60-2q", "m60-1q"])
    consolidation_profile: str = "m60-2q"
    max_guests: int = 4  # consolidation: CAD guests added one by one up to this (or QoS, or capacity)
    # <out_dir>/<time>/: run directories, report, the exported MLflow runs
    out_dir: str = field(default="outputs/study", metadata={"path": True})
    # A gpu-check summary.json whose measured GPU seconds ("timings": {"<workload>/<tier>": s}) the planner uses
    # instead of its guesses (suites/campaign/costs.py WORK_S).
    timings: Optional[str] = field(default=None, metadata={"path": True})
    # Plan from trial runs on this host: one timed bench run per workload at the study's sizes, cached per host and
    # device in <out_dir>/trials.json (suites/campaign/costs.py); false: the planner's table alone.
    trials: bool = True
    calibrate: Optional[bool] = None  # the old name of trials: read for a release, said

    def check(self) -> StudySettings:
        """These settings checked (a ConfigError names the first wrong key), the old name's value under the new."""
        if self.calibrate is not None:
            warnings.warn("study.calibrate is study.trials now (the old name is read until the next release)",
                          RenamedSetting, stacklevel=2)
            return dataclasses.replace(self, trials=self.calibrate, calibrate=None).check()
        require(0 < self.budget_s <= MAX_BUDGET_S, "study.budget_s",
                f"must be seconds in (0, {MAX_BUDGET_S:.0f}] (a week), got {self.budget_s}")
        require(self.tier in TIERS, "study.tier", f"must be one of {', '.join(TIERS)}, got {self.tier!r}")
        require(self.repeats is None or 1 <= self.repeats <= 20, "study.repeats", f"must be 1..20, got {self.repeats}")
        require(bool(self.profiles), "study.profiles", "must name at least one profile")
        require(1 <= self.max_guests <= 64, "study.max_guests", f"must be 1..64, got {self.max_guests}")
        return self


def load_timings(path: str | None) -> dict[tuple[str, str], float]:
    """``study.timings``: (workload, tier) -> GPU seconds measured by make gpu-check; {} when not given."""
    if not path:
        return {}
    try:
        raw = json.loads(Path(path).read_text())["timings"]
        return {tuple(k.split("/", 1)): float(v) for k, v in raw.items()  # type: ignore[misc]
                if "/" in k and isinstance(v, (int, float)) and math.isfinite(v) and v > 0}
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ConfigError(f"study.timings: {path} is not a gpu-check summary.json ({exc})") from None


def split_args(argv: list[str]) -> tuple[list[str], list[str]]:
    """(``study.*`` settings, everything else: overrides every part of the study is composed with)."""
    mine = [a for a in argv if a.startswith(PREFIX)]
    return mine, [a for a in argv if not a.startswith(PREFIX)]


def load_settings(args: list[str]) -> StudySettings:
    """``study.key=value`` arguments over the defaults, validated; any problem is one ConfigError line."""
    return load_own(StudySettings, "study", [a[len(PREFIX):] for a in args])
