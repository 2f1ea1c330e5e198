"""The one place where ``backend=`` becomes a backend object."""

from __future__ import annotations

import importlib.util

from suites.backends.base import Backend
from suites.backends.local import LocalBackend
from suites.backends.ray.cluster import RayBackend
from suites.backends.vm.backend import VmBackend
from suites.config.schema import BackendName, BenchConfig, Sharing
from suites.errors import ConfigError


def backend_for(cfg: BenchConfig) -> Backend:
    if cfg.backend is BackendName.ray:
        if importlib.util.find_spec("ray") is None:  # a bare GPU image has no Ray: one line, not a traceback
            raise ConfigError("backend=ray: ray is not installed in this Python (extra ray: pip install -e '.[ray]')")
        return RayBackend(cfg.ray, cfg.profile.vcpus, cfg.scenario.cpu_overcommit,
                          cfg.scenario.start_timeout_s, cfg.sampler.rate_hz)
    if cfg.backend is BackendName.vm:
        return VmBackend(cfg.vm, cfg.scenario.cpu_overcommit)
    return LocalBackend(cfg.scenario.cpu_overcommit, mps=cfg.sharing is Sharing.mps)
