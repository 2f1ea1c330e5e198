"""The top-level config schema: profile × workload × scenario, plus run settings.

Hydra composes ``configs/config.yaml`` against these dataclasses; the YAML
files only set values. :func:`load` turns a composed DictConfig into a
validated :class:`BenchConfig` object, the only form the runner accepts.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from hydra.core.config_store import ConfigStore
from omegaconf import MISSING, DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from suites import workloads
from suites.data import DataConfig
from suites.errors import ConfigError, require
from suites.profiles import ProfileConfig
from suites.runner.ray_guests import RayConfig
from suites.scenario import ScenarioConfig
from suites.workloads.base import WorkloadConfig


class ProgressMode(Enum):
    auto = "auto"  # live view on a terminal, periodic log lines otherwise (CI)
    live = "live"
    quiet = "quiet"


class Backend(Enum):
    local = "local"  # guests are processes on this host
    ray = "ray"  # guests are Ray actors on the cluster at ray.address (suites/runner/ray_guests.py)


@dataclass
class SamplerConfig:
    rate_hz: float = 10.0

    def check(self) -> None:
        require(0 < self.rate_hz <= 200, "sampler.rate_hz", f"must be in (0, 200], got {self.rate_hz}")


@dataclass
class BenchConfig:
    profile: ProfileConfig = MISSING
    workload: WorkloadConfig = MISSING
    scenario: ScenarioConfig = MISSING
    data: DataConfig = field(default_factory=DataConfig)
    sampler: SamplerConfig = field(default_factory=SamplerConfig)
    backend: Backend = Backend.local
    ray: RayConfig = field(default_factory=RayConfig)
    tracking_uri: str = "sqlite:///outputs/mlflow.db"  # relative paths resolve against the launch directory
    fallback_tracking_uri: str = "sqlite:///outputs/mlflow-fallback.db"  # used when tracking_uri fails mid-run
    experiment: str = "gpu-mixed-bench"
    artifact_dir: str = "outputs/mlartifacts"  # artifact root for a new experiment on a local store
    progress: ProgressMode = ProgressMode.auto
    seed: int = 0
    repeats: int = 1  # each guest trains N times; results are olympic means with CoV

    def check(self) -> None:
        for part in (self.profile, self.workload, self.scenario, self.data, self.sampler, self.ray):
            part.check()
        require(self.workload.name in workloads.REGISTRY, "workload.name",
                f"unknown workload {self.workload.name!r} (known: {', '.join(sorted(workloads.REGISTRY))})")
        require(bool(self.experiment.strip()), "experiment", "must not be empty")
        require(self.seed >= 0, "seed", f"must be >= 0, got {self.seed}")
        require(1 <= self.repeats <= 100, "repeats", f"must be 1..100, got {self.repeats}")


ConfigStore.instance().store(name="base_config", node=BenchConfig)


def load(cfg: DictConfig) -> BenchConfig:
    """Composed config -> validated dataclasses; any problem is one ConfigError line."""
    try:
        obj: Any = OmegaConf.to_object(cfg)
    except OmegaConfBaseException as exc:
        raise ConfigError(one_line(exc)) from exc
    if not isinstance(obj, BenchConfig):
        raise ConfigError("config root is not a BenchConfig (configs/config.yaml must use base_config)")
    obj.check()
    return obj


def one_line(exc: BaseException) -> str:
    """Collapse Hydra/OmegaConf error text (multi-line, with object dumps) to one line."""
    key = getattr(exc, "full_key", None)
    msg = getattr(exc, "msg", None) or str(exc)
    lines = [ln.strip() for ln in msg.strip().splitlines() if ln.strip()]
    first = lines[0] if lines else type(exc).__name__
    if first.endswith(":") and len(lines) > 1:  # "...raised while composing config:" + the reason
        first = f"{first} {lines[1]}"
    options = getattr(exc, "options", None)
    if options:
        shown = sorted(o for o in options if not o.startswith("base_"))  # schemas are not choices
        first += f" (choose from: {', '.join(shown)})"
    text = f"{key}: {first}" if key and key not in first else first
    cause = exc.__cause__
    if cause is not None and cause is not exc and isinstance(cause, OmegaConfBaseException):
        more = one_line(cause)
        text += "" if more in text else f" — {more}"
    return text
