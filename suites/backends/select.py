"""The one place where ``backend=`` becomes a backend object."""

from __future__ import annotations

from pathlib import Path

from suites.backends.base import Backend
from suites.backends.local import LocalBackend
from suites.backends.ray import RayBackend
from suites.config.schema import BackendKind, BenchConfig


def backend_for(cfg: BenchConfig, base_dir: Path) -> Backend:
    if cfg.backend is BackendKind.ray:
        return RayBackend(cfg.ray, base_dir, cfg.profile.vcpus, cfg.scenario.cpu_overcommit,
                          cfg.scenario.start_timeout_s)
    return LocalBackend(cfg.scenario.cpu_overcommit)
