"""Composition, once: every scenario run a command line asks for, fully composed before anything starts.

A plain scenario is one run. A comparison is one run per phase, each the
command line plus the phase's overrides (so a phase is exactly the run a user
would get by typing those overrides); a mixed scenario generates its phases from
``scenario.mixed``. Guest groups (``scenario.groups``) compose each group's own workload config.
:func:`compose_run` does all of it and hands the result on; nothing is composed
again later.
"""

from __future__ import annotations

import copy
import functools
from dataclasses import asdict, dataclass
from typing import Any

import psutil
from hydra import compose as hydra_compose
from hydra import initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from hydra.errors import HydraException
from omegaconf import DictConfig, open_dict
from omegaconf.errors import OmegaConfBaseException

from suites.config import device_file, stand_in
from suites.config.scenario import CAD_ALONE, CAD_AND_ML, ML_ALONE, GuestGroup, PhaseConfig, counts_of
from suites.config.schema import CONFIG_DIR, BenchConfig, load, one_line
from suites.errors import BenchError, ConfigError
from suites.run_kinds import RunKind
from suites.workloads.base import WorkloadConfig


@dataclass
class WorkloadGroup:
    """Guests running one workload config (a scenario's groups are several)."""

    workload: WorkloadConfig
    guests: int


@dataclass
class RunConfig:
    """One scenario run, fully composed: what planning needs and what the records keep."""

    cfg: BenchConfig
    dcfg: DictConfig  # the same, as composed (resolved into the run's config.yaml and MLflow params)
    groups: list[WorkloadGroup]
    phase: PhaseConfig | None = None  # set for a comparison's phase

    @property
    def label(self) -> str:
        return self.phase.label if self.phase else ""


@dataclass
class Composition:
    """The command line's own config and every run it asks for, in order."""

    cfg: BenchConfig
    dcfg: DictConfig
    runs: list[RunConfig]

    @property
    def compares(self) -> bool:
        return self.cfg.scenario.compares


def compose(overrides: list[str], groups: list[Any] | None = None) -> tuple[BenchConfig, DictConfig]:
    """configs/config.yaml with these overrides (and guest groups, which the override grammar cannot express
    comfortably), inside or outside the running Hydra app. Schemas must be registered first."""
    refuse_retired(overrides)
    dcfg = compose_raw(overrides)
    if groups:
        dcfg.scenario.groups = list(groups)  # typed node: OmegaConf validates the GuestGroup dataclasses
    return load(dcfg), dcfg


def refuse_retired(overrides: list[str]) -> None:
    retired = next((o for o in overrides if o.startswith(("+experiment=", "experiment/"))), None)
    if retired:  # the config group became `preset` so that experiment=NAME can name the MLflow experiment
        raise ConfigError(f"{retired}: presets are +preset=NAME now (configs/preset/); experiment=NAME names the "
                          "MLflow experiment")


def without_hydra(hcfg: DictConfig) -> DictConfig:
    """The config of a composition made with Hydra's node (``compose_raw(..., with_hydra=True)``), as a
    composition without it would be (Hydra's compose drops the node the same way); ``hcfg`` is left as it is."""
    dcfg = copy.deepcopy(hcfg)
    with open_dict(dcfg):
        del dcfg["hydra"]
    return dcfg


def compose_raw(overrides: list[str], with_hydra: bool = False) -> DictConfig:
    """Hydra's composition of configs/config.yaml with these overrides, inside or outside the running Hydra app;
    ``with_hydra``: with Hydra's own node (its run and sweep directories as the command line set them)."""
    if GlobalHydra.instance().is_initialized():  # inside the Hydra app
        return hydra_compose("config", overrides=overrides, return_hydra_config=with_hydra)
    if not with_hydra and not any(o.lstrip("+~").startswith("hydra") for o in overrides):
        return copy.deepcopy(composed_config(tuple(overrides)))
    with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base="1.3"):
        return hydra_compose("config", overrides=overrides, return_hydra_config=with_hydra)


@functools.lru_cache(maxsize=256)
def composed_config(overrides: tuple[str, ...]) -> DictConfig:
    """configs/config.yaml with ``overrides``, composed once per process outside the Hydra app (its search path is
    configs/ alone, and what the config reads from the environment stays an unresolved interpolation until it is
    loaded): a sizing's or a study's plan composes each of its phases again for every part and estimate (222
    compositions of 88 distinct ones in the sizing and study planning tests, 0.2 s of Hydra each). Hydra's own node
    (the working directory it records) and a user's search path are composed afresh every time; callers get copies."""
    with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base="1.3"):
        return hydra_compose("config", overrides=list(overrides))


def compose_run(overrides: list[str], dcfg: DictConfig | None = None) -> Composition:
    """Everything the command line asks for; ``dcfg``: the config Hydra already composed from ``overrides``.

    A phase or group that does not compose is one ConfigError naming it.
    """
    overrides = own_overrides(overrides)
    cfg, dcfg = compose(overrides) if dcfg is None else (load(dcfg), dcfg)
    if not cfg.scenario.compares:
        return Composition(cfg, dcfg, [RunConfig(cfg, dcfg, workload_groups(cfg))])
    runs = []
    for phase in comparison_phases(cfg):
        try:
            pcfg, pdcfg = compose_phase(overrides, phase)
            runs.append(RunConfig(pcfg, pdcfg, workload_groups(pcfg), phase))
        except (BenchError, HydraException, OmegaConfBaseException) as exc:
            raise ConfigError(f"phase {phase.label}: {one_line(exc)}") from exc
    return Composition(cfg, dcfg, runs)


def own_overrides(overrides: list[str]) -> list[str]:
    """The overrides that shape the config: not Hydra's own settings (run dir, launcher), except its search path,
    where a user's own profiles and workloads are found."""
    return [o for o in overrides if not o.startswith(("hydra.", "hydra/")) or o.startswith("hydra.searchpath=")]


def compose_phase(base_overrides: list[str], phase: PhaseConfig) -> tuple[BenchConfig, DictConfig]:
    """The phase's config: the command line, then the phase's overrides, with no further phases."""
    overrides = own_overrides(base_overrides)
    overrides += [*phase.overrides, "scenario.phases=[]", "scenario.baseline=null", f"scenario.kind={RunKind.PLAIN}"]
    return compose(overrides, phase.groups)


def workload_groups(cfg: BenchConfig) -> list[WorkloadGroup]:
    """The scenario's groups, each its own workload config file plus its own overrides; else guests x the
    selected workload."""
    if not cfg.scenario.groups:
        return played([WorkloadGroup(cfg.workload, cfg.scenario.guests)], cfg)
    groups = []
    for g in cfg.scenario.groups:
        try:
            workload = group_workload(g.workload, tuple(g.overrides), cfg.scale)
        except (BenchError, HydraException, OmegaConfBaseException) as exc:
            raise ConfigError(f"scenario.groups[{g.workload}]: {one_line(exc)}") from exc
        groups.append(WorkloadGroup(workload, g.guests))
    return replays_as_long_as_ml(played(groups, cfg))


def group_workload(workload: str, overrides: tuple[str, ...], scale: str) -> WorkloadConfig:
    """A guest group's workload config: its own file at the run's ``scale`` (``+preset=smoke``: the workload's own
    smoke sizes, as for the run's single workload: a mixed run's CAD guests replayed every frame of each test at
    smoke size, six times what a smoke sizing's plan counted) plus its overrides, which win. Outside the Hydra app
    (where every command plans: the search path is configs/ alone) the same group composes the same config, so each
    is composed once per process: a sizing's phases and parts repeat their groups (24 of an H200 sizing plan's 67
    compositions, a third of its seconds), each given a copy of its own."""
    if GlobalHydra.instance().is_initialized():  # inside the app: its search path may hold a user's own workloads
        return compose([f"workload={workload}", f"scale={scale}", *overrides])[0].workload
    return copy.deepcopy(composed_workload(workload, overrides, scale))


@functools.lru_cache(maxsize=256)
def composed_workload(workload: str, overrides: tuple[str, ...], scale: str) -> WorkloadConfig:
    return compose([f"workload={workload}", f"scale={scale}", *overrides])[0].workload


def played(groups: list[WorkloadGroup], cfg: BenchConfig) -> list[WorkloadGroup]:
    """``stand_in=<device file>``: each group's workload at that device's speed (:mod:`suites.config.stand_in`), a
    guest without a GPU (``profile.gpus=0``) at the CPU's; else the groups as they are."""
    if not cfg.stand_in:
        return groups
    dev = device_file.load(cfg.stand_in)
    return [WorkloadGroup(stand_in.play(g.workload, dev, cfg.profile.gpus > 0, cfg.data.synthetic_train), g.guests)
            for g in groups]


def replays_as_long_as_ml(groups: list[WorkloadGroup]) -> list[WorkloadGroup]:
    """Beside an open-ended ML guest (``workload.until_stopped``, which trains until the guests beside it finish),
    a CAD replay with no ``min_replay_s`` of its own replays for the ML guest's window (``min_window_s``): one pass
    at a GPU's frame rates is a fraction of that window, and a slowdown measured over windows that overlap less than
    90 % is no verdict."""
    windows = [g.workload.min_window_s for g in groups if getattr(g.workload, "until_stopped", False)]
    if not windows:
        return groups
    for g in groups:
        if hasattr(g.workload, "min_replay_s") and g.workload.min_replay_s is None:
            g.workload.min_replay_s = max(windows)  # type: ignore[attr-defined]
    return groups


def mixed_profiles(cfg: BenchConfig) -> list[str]:
    return list(cfg.scenario.mixed.profiles) or [cfg.profile.name]


def mixed_phases(cfg: BenchConfig) -> list[PhaseConfig]:
    """``mixed``: CAD alone, CAD + ML, ML alone per profile. ``consolidation``: ML alone, then 1, 2, ... CAD
    guests (beside the ML guest) up to ``max_guests``."""
    settings = cfg.scenario.mixed
    cad, ml = GuestGroup(**asdict(settings.cad)), GuestGroup(**asdict(settings.ml))
    if cfg.scenario.kind == RunKind.MIXED:
        return [PhaseConfig(f"{p}/{phase}", [f"profile={p}"], mix) for p in mixed_profiles(cfg)
                for phase, mix in ((CAD_ALONE, [cad]), (CAD_AND_ML, [cad, ml]), (ML_ALONE, [ml]))]
    p = mixed_profiles(cfg)[0]
    sized, _ = consolidation_memory(cfg)
    base = [f"profile={p}", *([f"profile.memory_MiB={sized}"] if sized else [])]
    steps = [PhaseConfig(f"{p}/{ML_ALONE}", list(base), [ml])] if settings.with_ml else []
    if settings.cad_alone:
        steps.append(PhaseConfig(f"{p}/{CAD_ALONE}", list(base), [GuestGroup(cad.workload, 1, list(cad.overrides))]))
    for n in counts_of(settings):
        group = GuestGroup(cad.workload, n, list(cad.overrides))
        steps.append(PhaseConfig(f"{p}/n{n}", list(base), [group, ml] if settings.with_ml else [group]))
    return steps


def consolidation_memory(cfg: BenchConfig) -> tuple[int | None, str]:
    """A consolidation's guests' memory, sized from the host where the profile's own does not fit its largest step
    (max_guests CAD guests + the ML guest): 90 % of the host's memory shared among them, in whole 256 MiB. (the
    size or None, and the note that says so before the sweep starts)."""
    settings = cfg.scenario.mixed
    largest = counts_of(settings)[-1] + (settings.ml.guests if settings.with_ml else 0)
    host_MiB = psutil.virtual_memory().total / 2**20
    want = cfg.profile.memory_MiB
    if cfg.scenario.kind != RunKind.CONSOLIDATION or largest * want <= host_MiB:
        return None, ""
    each = max(256, int(0.9 * host_MiB / largest) // 256 * 256)
    return each, (f"consolidation: {largest} guests x {want} MiB (profile {cfg.profile.name}) > {host_MiB:.0f} MiB "
                  f"host memory: each guest gets {each} MiB (90 % of the host's memory over its largest step), so "
                  f"all {len(counts_of(settings))} counts fit")


def comparison_phases(cfg: BenchConfig) -> list[PhaseConfig]:
    """What a comparison runs: the mixed scenario's generated phases, else the scenario's declared ones."""
    return mixed_phases(cfg) if cfg.scenario.kind != RunKind.PLAIN else list(cfg.scenario.phases)


def scenario_title(cfg: BenchConfig) -> str:
    """'2 x m60-8q running graphics-replay' or, for a mix, '3 x m60-8q running 2 x graphics-replay + 1 x ...'."""
    if not cfg.scenario.groups:
        return f"{cfg.scenario.guests} x {cfg.profile.name} running {cfg.workload.name}"
    groups = cfg.scenario.groups
    return f"{sum(g.guests for g in groups)} x {cfg.profile.name} running " + " + ".join(
        f"{g.guests} x {g.workload}" for g in groups)
