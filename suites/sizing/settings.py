"""``make size``'s own settings: ``configs/sizing/<name>.yaml`` (``sizing=<name>``, default ``default``) with
``sizing.<key>=<value>`` over it; every other argument is a bench override given to each consolidation it runs."""

from __future__ import annotations

import dataclasses
import math
import warnings
from dataclasses import dataclass, field
from typing import Optional

from suites.capacity.curve import QOS_METRICS
from suites.config.own import load_own
from suites.config.schema import CONFIG_DIR
from suites.errors import ConfigError, RenamedSetting, require

__all__ = ["PREFIX", "SizingSettings", "load_settings", "split_args"]

PREFIX = "sizing."
GROUP = CONFIG_DIR / "sizing"
POLICIES = ("timeslice", "mps")  # the words of the bench's sharing=<policy>
OLD_POLICY_NAMES = {"time-slice": "timeslice"}  # read for a release, said
TIERS = ("auto", "full", "smoke")
# The QoS levels as NVIDIA's sizing guides state them: "dedicated performance" (strict: the recommendation's) and
# "typical deployment" (the density a site accepts where users do not all peak at once)
STRICT, TYPICAL = "strict", "typical"


@dataclass(frozen=True)
class HostSettings:
    cores: Optional[int] = None  # null: this host's
    memory_MiB: Optional[int] = None
    cpu_overcommit: float = 1.0


@dataclass(frozen=True)
class PriceSettings:
    gpu: Optional[float] = None
    licence_per_year: Optional[float] = None


@dataclass(frozen=True)
class SizingSettings:
    mix: dict[str, int] = field(default_factory=lambda: {"cad": 20, "ml": 2})
    # CAD users by type (light / medium / heavy, each a viewset size of cad_sizes); {}: mix.cad users of cad_size.
    # Where given they are the CAD users (mix.cad is not used, and the sizing says so)
    users: dict[str, int] = field(default_factory=dict)
    cad_size: str = "medium"
    cad_sizes: dict[str, list[str]] = field(default_factory=dict)
    gpu: str = ""
    profiles: list[str] = field(default_factory=list)
    consolidation_profile: str = "m60-2q"
    gpus_per_host: int = 4
    spare: int = 0
    host: HostSettings = field(default_factory=HostSettings)
    qos: dict[str, Optional[float]] = field(default_factory=dict)  # the strict level's limits
    qos_typical: dict[str, Optional[float]] = field(default_factory=dict)  # the typical level's
    reserve_MiB: float = 0.0
    price: PriceSettings = field(default_factory=PriceSettings)
    years: float = 3.0
    repeats: int = 3
    # Seconds the sizing's measurements may take by its estimate (9 minutes: within a lent GPU's 10-minute command):
    # counts, repeats, policies and candidates are trimmed in that order until it fits (capacity/budget.py), each said
    budget_s: float = 540.0
    max_guests: int = 4
    counts: list[int] = field(default_factory=list)  # the counts measured ([]: each 1..max_guests); the rest predicted
    steps: Optional[list[int]] = None  # the old name of counts (a step is a training step): read for a release, said
    policies: list[str] = field(default_factory=lambda: ["timeslice"])
    tier: str = "auto"
    reuse: bool = True
    out_dir: str = field(default="outputs/sizing", metadata={"path": True})

    def check(self) -> SizingSettings:
        """These settings checked (a ConfigError names the first wrong key), an old name's value under the new."""
        require(set(self.mix) <= {"cad", "ml"} and bool(self.mix), "sizing.mix",
                f"must name cad and/or ml counts, got {dict(self.mix)}")
        require(all(v >= 0 for v in self.mix.values()) and sum(self.mix.values()) > 0, "sizing.mix",
                "counts must be >= 0, and not all 0")
        require(self.cad_size in self.cad_sizes, "sizing.cad_size",
                f"must be one of {', '.join(self.cad_sizes)}, got {self.cad_size!r}")
        require(self.gpus_per_host >= 1, "sizing.gpus_per_host", f"must be >= 1, got {self.gpus_per_host}")
        require(self.spare >= 0, "sizing.spare", f"must be >= 0, got {self.spare}")
        require(1 <= self.repeats <= 20, "sizing.repeats", f"must be 1..20, got {self.repeats}")
        require(0 < self.budget_s <= 86400 and self.budget_s == self.budget_s, "sizing.budget_s",
                f"must be seconds in (0, 86400], got {self.budget_s}")
        require(1 <= self.max_guests <= 64, "sizing.max_guests", f"must be 1..64, got {self.max_guests}")
        if self.steps is not None:
            warnings.warn("sizing.steps is sizing.counts now (the old name is read until the next release)",
                          RenamedSetting, stacklevel=2)
            return dataclasses.replace(self, counts=list(self.steps), steps=None).check()
        require(all(1 <= n <= 64 for n in self.counts) and self.counts == sorted(set(self.counts)), "sizing.counts",
                f"must be increasing counts 1..64, got {list(self.counts)}")
        renamed = new_policy_names(self.policies)  # an old name said, then read as its new one
        if renamed != list(self.policies):
            return dataclasses.replace(self, policies=renamed).check()
        require(set(self.policies) <= set(POLICIES) and bool(self.policies), "sizing.policies",
                f"must be some of {', '.join(POLICIES)}, got {list(self.policies)}")
        require(self.tier in TIERS, "sizing.tier", f"must be one of {', '.join(TIERS)}, got {self.tier!r}")
        require(0 < self.years <= 100, "sizing.years", f"must be years in (0, 100], got {self.years}")
        self.check_host_and_prices()
        require(set(self.users) <= set(self.cad_sizes) and all(v >= 0 for v in self.users.values()) and
                (not self.users or sum(self.users.values()) > 0), "sizing.users",
                f"must give CAD users (>= 0, not all 0) of the types {', '.join(self.cad_sizes)}, "
                f"got {dict(self.users)}")
        for name, qos in (("sizing.qos", self.qos), ("sizing.qos_typical", self.qos_typical)):
            unknown = sorted(set(qos) - set(QOS_METRICS))
            require(not unknown, name, f"no such QoS metric {', '.join(unknown)} (there: {', '.join(QOS_METRICS)})")
            require(all(v is None or (v > 0 and math.isfinite(v)) for v in qos.values()) and bool(qos), name,
                    "each limit must be a finite number > 0 (or null: reported, not limited)")
        return self

    def check_host_and_prices(self) -> None:
        """Every number a cost or a host limit is computed from: finite and in its range (a negative price gave a
        negative cost per user; an infinite overcommit a traceback after the whole measurement)."""
        h = self.host
        require(h.cores is None or 1 <= h.cores <= 100_000, "sizing.host.cores",
                f"must be a core count >= 1 (or null: not a limit), got {h.cores}")
        require(h.memory_MiB is None or 256 <= h.memory_MiB <= 2**40, "sizing.host.memory_MiB",
                f"must be MiB >= 256 (or null: not a limit), got {h.memory_MiB}")
        require(math.isfinite(h.cpu_overcommit) and 0 < h.cpu_overcommit <= 64, "sizing.host.cpu_overcommit",
                f"must be vCPUs per core in (0, 64], got {h.cpu_overcommit}")
        for key, price in (("gpu", self.price.gpu), ("licence_per_year", self.price.licence_per_year)):
            require(price is None or (math.isfinite(price) and price >= 0), f"sizing.price.{key}",
                    f"must be a finite price >= 0 (or null: not priced), got {price}")
        require(math.isfinite(self.reserve_MiB) and 0 <= self.reserve_MiB <= 2**20, "sizing.reserve_MiB",
                f"must be MiB in [0, 1048576], got {self.reserve_MiB}")

    @property
    def cad_users(self) -> dict[str, int]:
        """CAD users by type: ``users`` where given, else ``mix.cad`` users of ``cad_size``."""
        return {k: v for k, v in self.users.items() if v} if self.users else {self.cad_size: self.mix.get("cad", 0)}

    @property
    def levels(self) -> dict[str, dict[str, float]]:
        """Each QoS level's limits (the strict one first: the recommendation's)."""
        return {STRICT: limited(self.qos), TYPICAL: limited(self.qos_typical)}

    @property
    def limits(self) -> dict[str, float]:
        return limited(self.qos)


def limited(qos: dict[str, Optional[float]]) -> dict[str, float]:
    return {k: float(v) for k, v in qos.items() if v is not None}


def split_args(argv: list[str]) -> tuple[str, list[str], list[str]]:
    """(the sizing file's name, ``sizing.*`` settings, everything else: bench overrides)."""
    name = next((a.split("=", 1)[1] for a in argv if a.startswith("sizing=")), "default")
    mine = [a for a in argv if a.startswith(PREFIX)]
    return name, mine, [a for a in argv if not a.startswith((PREFIX, "sizing="))]


def load_settings(name: str, args: list[str]) -> SizingSettings:
    """``configs/sizing/<name>.yaml`` with ``sizing.key=value`` over it, validated; any problem one ConfigError."""
    path = GROUP / f"{name}.yaml"
    if not name or "/" in name or not path.is_file():
        known = ", ".join(sorted(p.stem for p in GROUP.glob("*.yaml")))
        raise ConfigError(f"sizing={name}: no such sizing file in {GROUP} (there: {known})")
    return load_own(SizingSettings, "sizing", [a[len(PREFIX):] for a in args], (path,))


def describe(settings: SizingSettings) -> dict[str, str]:
    """The settings as MLflow params (the mix and the limits first: what two sizings are compared on)."""
    out = {"mix": ",".join(f"{k}={v}" for k, v in settings.mix.items()), "cad_size": settings.cad_size,
           "users": ",".join(f"{k}={v}" for k, v in settings.cad_users.items()),
           **{f"qos.{k}": str(v) for k, v in settings.qos.items()},
           **{f"qos_typical.{k}": str(v) for k, v in settings.qos_typical.items()}}
    out.update({"gpu": settings.gpu or "-", "gpus_per_host": str(settings.gpus_per_host), "spare": str(settings.spare),
                "price.gpu": str(settings.price.gpu), "price.licence_per_year": str(settings.price.licence_per_year),
                "years": str(settings.years), "repeats": str(settings.repeats), "max_guests": str(settings.max_guests),
                "counts": ",".join(map(str, settings.counts)) or "each",
                "steps": ",".join(map(str, settings.counts)) or "each",  # counts' old name: for a release
                "policies": ",".join(settings.policies), "reserve_MiB": str(settings.reserve_MiB)})
    return out


def new_policy_names(policies: list[str]) -> list[str]:
    """``sizing.policies`` with an old name (``time-slice``) as the bench's ``sharing=`` says it (``timeslice``),
    said once."""
    old = [p for p in policies if p in OLD_POLICY_NAMES]
    if old:
        warnings.warn(f"sizing.policies: {', '.join(old)} is {', '.join(OLD_POLICY_NAMES[p] for p in old)} now, as "
                      "sharing= says it (the old name is read until the next release)", RenamedSetting, stacklevel=2)
    return [OLD_POLICY_NAMES.get(p, p) for p in policies]
