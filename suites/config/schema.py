"""The top-level config schema: profile × workload × scenario, plus run settings.

Hydra composes ``configs/config.yaml`` against these dataclasses, registered
by :func:`register_configs` (the app calls it before composing); the YAML files
only set values. :func:`load` turns a composed DictConfig into a validated
:class:`BenchConfig` object, the only form the rest of the suite accepts.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import math
import os
from dataclasses import dataclass, field
from datetime import datetime
from enum import Enum
from pathlib import Path
from typing import Any, Optional
from urllib.parse import urlparse

from hydra.core.config_store import ConfigStore
from omegaconf import MISSING, DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from suites.config import profiles
from suites.config.paths import absolute_paths, launch_dir
from suites.config.profiles import ProfileConfig
from suites.config.scenario import ScenarioConfig, settle
from suites.data.options import DataConfig
from suites.errors import ConfigError, first_line, redact, require
from suites.workloads import registry
from suites.workloads.base import WorkloadConfig

CONFIG_DIR = Path(__file__).resolve().parents[2] / "configs"
# Where results go unless told otherwise: the one place these defaults are written (CLIs and make targets read them).
TRACKING_URI = "sqlite:///outputs/mlflow.db"  # relative paths resolve against the launch directory
FALLBACK_TRACKING_URI = "sqlite:///outputs/mlflow-fallback.db"
EXPERIMENT = "gpu-mixed-bench"
ARTIFACT_DIR = "outputs/mlartifacts"


class ProgressMode(Enum):
    auto = "auto"  # live view on a terminal, periodic log lines otherwise (CI)
    live = "live"
    quiet = "quiet"


class Sharing(Enum):
    # How guests on one GPU share it. timeslice: the driver's time-slicing, with a framework-level framebuffer cap
    # (cooperative). mps: the run's own CUDA MPS control daemon gives each guest its SM share and a device memory
    # limit the driver enforces for any framework (suites/backends/mps.py).
    timeslice = "timeslice"
    mps = "mps"


class BackendName(Enum):
    """Where a run's guests run: the ``backend=`` choice, by its config name (no run's kind: that word is the
    store's, suites/store_keys.py)."""

    local = "local"  # guests are processes on this host
    ray = "ray"  # guests are Ray actors on the cluster at ray.address (suites/backends/ray/cluster.py)
    vm = "vm"  # guests are QEMU VMs on this host (suites/backends/vm/)


@dataclass
class SamplerConfig:
    rate_hz: float = 10.0

    def check(self) -> None:
        require(0 < self.rate_hz <= 200, "sampler.rate_hz", f"must be in (0, 200], got {self.rate_hz}")


FRACTIONAL, PER_NODE = "fractional", "per-node"


@dataclass
class RayConfig:
    # An existing cluster: "auto" (RAY_ADDRESS, else the cluster this node runs), "HOST:PORT", "ray://HOST:10001".
    address: str = "auto"
    namespace: str = "gpu-mixed-bench"
    # Ship this directory (relative to the launch directory) to the nodes as the actors' working dir; unset:
    # every node already has this suite installed (a node whose git SHA differs says so in the placement note).
    working_dir: Optional[str] = field(default=None, metadata={"path": True})
    # gitignore patterns, as Ray reads them: anchored at the shipped folder's root ("/data", not "data", which would
    # match suites/data/ too); an entry that would drop a module of the suite is refused before Ray is joined.
    excludes: list[str] = field(default_factory=lambda: ["/.git", "/.venv", "/.uv", "/.whl", "/.gl", "/.vm",
                                                         "/.vm-nvidia", "/outputs", "/multirun", "/data"])
    # fractional: Ray packs guests by resources (a vGPU profile asks 1/max_per_gpu of a GPU: emulated).
    # per-node: each guest one whole node (a VM) whose own GPU is the profile, as gpu_probe there reports it.
    placement: str = FRACTIONAL
    # per-node: which nodes' vGPUs are slices of one physical GPU, as the site knows it (a vGPU guest cannot see its
    # physical GPU): {group: [node hostname or address, ...]}, e.g. +ray.gpu_groups.gpu0=[vm-a,vm-b]. Recorded as
    # stated, not seen.
    gpu_groups: dict[str, list[str]] = field(default_factory=dict)

    def check(self) -> None:
        require(bool(self.address.strip()), "ray.address", "must name a cluster: auto, HOST:PORT or ray://HOST:PORT")
        require(self.placement in (FRACTIONAL, PER_NODE), "ray.placement",
                f"must be {FRACTIONAL} or {PER_NODE}, got {self.placement!r}")


class Accel(Enum):
    auto = "auto"  # KVM when a bounded test boot succeeds, else TCG with the reason
    kvm = "kvm"
    tcg = "tcg"  # emulation: its results are never a performance measurement (validity: not enforced)


@dataclass
class VmConfig:
    accel: Accel = Accel.auto
    # what `make setup-vm` built; "" = .vm in the repository
    image_dir: str = field(default="", metadata={"path": True})
    boot_timeout_s: float = 120.0  # from QEMU's start to the guest's first protocol line (TCG boots in ~5 s)
    kvm_probe_s: float = 20.0  # accel=auto: how long the KVM test boot may take before TCG is used
    # where GPUs are looked up (VFIO, mdev types); tests point it at a fixture tree
    sysfs: str = field(default="/sys", metadata={"path": True})
    # the NVIDIA driver the image must hold: "" any (or none), "open", or the NVIDIA (passthrough) or GRID guest
    # driver (vGPU) .run it was built from (make setup-vm VM_DRIVER=...); with one, the image is .vm-nvidia unless
    # image_dir says otherwise
    guest_driver: str = ""

    def check(self) -> None:
        require(self.boot_timeout_s > 0, "vm.boot_timeout_s", f"must be > 0, got {self.boot_timeout_s}")
        require(0 < self.kvm_probe_s <= 20, "vm.kvm_probe_s", f"must be in (0, 20], got {self.kvm_probe_s}")


@dataclass
class BenchConfig:
    profile: ProfileConfig = MISSING
    workload: WorkloadConfig = MISSING
    scenario: ScenarioConfig = MISSING
    data: DataConfig = field(default_factory=DataConfig)
    sampler: SamplerConfig = field(default_factory=SamplerConfig)
    backend: BackendName = BackendName.local
    sharing: Sharing = Sharing.timeslice
    ray: RayConfig = field(default_factory=RayConfig)
    vm: VmConfig = field(default_factory=VmConfig)
    tracking_uri: str = field(default=TRACKING_URI, metadata={"uri": True})
    # used when tracking_uri fails mid-run
    fallback_tracking_uri: str = field(default=FALLBACK_TRACKING_URI, metadata={"uri": True})
    experiment: str = EXPERIMENT
    # artifact root for a new experiment on a local store
    artifact_dir: str = field(default=ARTIFACT_DIR, metadata={"path": True})
    progress: ProgressMode = ProgressMode.auto
    # "full" or "smoke" (+preset=smoke: a seconds-long check of the machinery): every score built on a smoke run
    # says so (set by the scale group, configs/config.yaml)
    scale: str = "full"
    seed: int = 0
    repeats: int = 1  # each guest trains N times; results are olympic means with CoV
    strict: bool = False  # refuse (exit 2, before anything starts) a run whose profile this host cannot enforce
    # A run that does not fit beside other benchmark runs' cores waits this long for them, then is refused
    # (0: refused at once). Default $BENCH_WAIT_FOR_CORES_S, else 600 (configs/config.yaml): a newcomer's first
    # command on a shared host queues instead of being refused.
    wait_for_cores_s: float = 600.0
    # The host is busy when processes that are not the run's use more than this much CPU (% of one core) before or
    # during it: every figure is marked so and its verdicts are inconclusive (strict=true refuses). Default
    # $BENCH_HOST_BUSY_PCT, else 25 (configs/config.yaml); at or above 100 x the host's cores the check is off.
    host_busy_pct: float = 25.0
    # make rehearse: a device file (configs/device/<gpu>.json, or a path) whose speeds every training and CAD replay
    # is played at by stand-ins on this host (suites/config/stand_in.py); "": the workloads themselves
    stand_in: str = ""

    def check(self) -> None:
        for part in (self.profile, self.workload, self.scenario, self.data, self.sampler, self.ray, self.vm):
            part.check()
        require(self.workload.name in registry(), "workload.name",
                f"unknown workload {self.workload.name!r} (known: {', '.join(registry())})")
        require(bool(self.experiment.strip()), "experiment", "must not be empty")
        require(self.experiment.isprintable(), "experiment", f"{self.experiment!r}: no newline or control "
                "character (MLflow's UI and the run lists show it on one line)")
        for key in ("tracking_uri", "fallback_tracking_uri"):
            check_store_uri(key, getattr(self, key))
        require(self.seed >= 0, "seed", f"must be >= 0, got {self.seed}")
        require(1 <= self.repeats <= 100, "repeats", f"must be 1..100, got {self.repeats}")
        require(self.wait_for_cores_s >= 0, "wait_for_cores_s", f"must be >= 0, got {self.wait_for_cores_s}")
        require(self.host_busy_pct >= 0 and math.isfinite(self.host_busy_pct), "host_busy_pct",
                f"must be a CPU share >= 0 (% of one core), got {self.host_busy_pct}")
        require(self.sharing is Sharing.timeslice or self.backend is BackendName.local, "sharing",
                "sharing=mps starts an MPS daemon on this host: it needs backend=local")


# What MLflow can record to: a local path or file:, sqlite:, a tracking server, Databricks, or a database
# (postgresql+psycopg2:// and the like). A mistyped scheme is refused as such, not taken for an unreachable server.
STORE_SCHEMES = ("", "file", "sqlite", "http", "https", "databricks", "postgresql", "mysql", "mssql")


def check_store_uri(key: str, uri: str) -> None:
    require(bool(uri.strip()), key, "must name an MLflow store (sqlite:///path, http://host:port, a folder)")
    scheme = urlparse(uri).scheme.split("+", 1)[0].lower()
    require(scheme in STORE_SCHEMES, key, f"unknown scheme {scheme + '://'!r} in {redact(uri)!r} (known: "
            f"{', '.join(s + '://' for s in STORE_SCHEMES if s)}, or a folder)")


def run_stamp() -> str:
    """A run directory's name (``${run_stamp:}`` in configs/config.yaml): the second it started, its milliseconds and
    the process id, so two runs started in the same second never share a directory (one would overwrite the
    other's results.json, and each MLflow run would get the other's guest logs)."""
    now = datetime.now()
    return f"{now:%Y-%m-%d_%H-%M-%S}.{now.microsecond // 1000:03d}-{os.getpid()}"


@functools.cache
def register_configs() -> None:
    """Make every schema known to Hydra's ConfigStore, once per process (the store is the process's; a second call
    found the same plugins and stored the same nodes again, 0.17 s a composition): call before composing.

    Per workload plugin: its schema ``workload/base_<name>`` (what its YAML
    extends), ``workload/<name>`` itself when it ships no YAML, and its smoke
    sizes as ``workload_scale/<name>-smoke`` (selected by ``scale=smoke``, which
    ``+preset=smoke`` sets; see configs/config.yaml).
    """
    OmegaConf.register_new_resolver("run_stamp", run_stamp, use_cache=True, replace=True)
    cs = ConfigStore.instance()
    cs.store(name="base_config", node=BenchConfig)
    cs.store(group="profile", name="base_profile", node=ProfileConfig)
    cs.store(group="scenario", name="base_scenario", node=ScenarioConfig)
    for scale in ("full", "smoke"):  # the workload_scale entry they select carries the values; they name themselves
        cs.store(group="scale", name=scale, node={"scale": scale}, package="_global_")
    for name, plugin in registry().items():
        cs.store(group="workload", name=f"base_{name.replace('-', '_')}", node=plugin.config_cls)
        if not (CONFIG_DIR / "workload" / f"{name}.yaml").exists():
            cs.store(group="workload", name=name, node=plugin.config_cls)
        cs.store(group="workload_scale", name=f"{name}-smoke", node=dict(plugin.smoke))


def load(cfg: DictConfig) -> BenchConfig:
    """Composed config -> validated dataclasses; any problem is one ConfigError line."""
    try:
        obj: Any = OmegaConf.to_object(cfg)
    except OmegaConfBaseException as exc:
        raise ConfigError(one_line(exc)) from exc
    if not isinstance(obj, BenchConfig):
        raise ConfigError("config root is not a BenchConfig (configs/config.yaml must use base_config)")
    settle(cfg.scenario, obj.scenario)
    profiles.settle(cfg.profile, obj.profile)
    obj.check()
    check_numbers(obj)
    return absolute_paths(obj, launch_dir())  # from here on every path in it is absolute


# Every number in the config is a count, a size, a time, a rate or a fraction: never negative (but these sentinels),
# never NaN or infinite, and an integer fits the 32 bits a seed, a C library or a device index takes (a 20-digit
# seed would fail inside the guest; workload.lr=inf would train to chance and report ok).
SENTINELS = {"workload.egl_device": -1}  # -1: the guest's own GPU's EGL device
INT_MAX = 2**31 - 1


def check_numbers(node: Any, prefix: str = "") -> None:
    """The rule above, on every numeric field of ``node`` and the dataclasses it holds; ConfigError naming it."""
    for f in dataclasses.fields(node):
        value, key = getattr(node, f.name), f"{prefix}{f.name}"
        if dataclasses.is_dataclass(value):
            check_numbers(value, key + ".")
        elif isinstance(value, (int, float)) and not isinstance(value, (bool, Enum)):
            require(math.isfinite(value), key, f"must be a finite number, got {value}")
            require(value >= SENTINELS.get(key, 0), key,
                    f"must be >= 0{' (or ' + str(SENTINELS[key]) + ')' if key in SENTINELS else ''}, got {value}")
            require(not isinstance(value, int) or value <= INT_MAX, key, f"must be <= {INT_MAX}, got {value}")


def experiment_name(value: str) -> str:
    """An MLflow experiment name as a command-line value (``--experiment``): not empty, one printable line."""
    if not value.strip() or not value.isprintable():
        raise argparse.ArgumentTypeError(f"{value!r}: must be a non-empty printable name (no newline or control "
                                         "character)")
    return value


def one_line(exc: BaseException) -> str:
    """Collapse Hydra/OmegaConf error text (multi-line, with object dumps) to one line."""
    key = getattr(exc, "full_key", None)
    msg = getattr(exc, "msg", None) or str(exc)
    lines = [ln.strip() for ln in msg.strip().splitlines() if ln.strip()]
    first = lines[0] if lines else first_line(exc)
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
