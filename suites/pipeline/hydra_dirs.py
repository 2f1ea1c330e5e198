"""Where Hydra will write, read from Hydra's own composition of the command line, and pinned there.

The raw argument ``hydra.run.dir=...`` is not where Hydra writes: ``++hydra.run.dir=configs``, a repeated key
(Hydra takes the last), ``hydra.sweep.dir`` + ``hydra.sweep.subdir=.`` or a quoted value each reach another folder
than one read off the argv, and a run there would overwrite ``configs/config.yaml`` or a finished run's
``results.json``. So Hydra itself composes its node from the command line, whatever the spelling; the folder it
resolves (``${run_stamp:}`` included) is the one checked, and it is handed back to Hydra as the last override
(:attr:`HydraDirs.pins`), so the folder checked is the folder written.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from hydra.errors import HydraException
from omegaconf import DictConfig, OmegaConf, open_dict
from omegaconf.errors import OmegaConfBaseException

from suites.config.compose import compose_raw
from suites.config.schema import one_line
from suites.errors import ConfigError
from suites.record.outdirs import require_outside_source


@dataclass
class HydraDirs:
    """The folders a command's Hydra will make: a run's directory, or a sweep's (its jobs' are checked, not kept)."""

    run_dir: Path | None = None
    sweep_dir: Path | None = None

    @property
    def pins(self) -> list[str]:
        """Overrides that fix Hydra on the folders resolved here (the run stamp resolved once, not twice)."""
        if self.sweep_dir is not None:
            return [f"hydra.sweep.dir={quoted(str(self.sweep_dir))}"]
        return [f"hydra.run.dir={quoted(str(self.run_dir))}"] if self.run_dir is not None else []


def quoted(value: str) -> str:
    """``value`` as Hydra's override grammar reads it back verbatim: single-quoted, with its quotes, the
    backslashes before them and any ``${`` escaped."""
    out, backslashes = [], 0
    for ch in value:
        if ch == "\\":
            backslashes += 1
            continue
        if ch == "'":
            out.append("\\" * (2 * backslashes) + "\\'")
        else:
            out.append("\\" * backslashes + ch)
        backslashes = 0
    out.append("\\" * (2 * backslashes))  # trailing backslashes precede the closing quote
    return "'" + "".join(out).replace("${", "\\${") + "'"


def hydra_node(overrides: list[str], job_num: int = 0) -> DictConfig:
    """Hydra's config for these overrides, with the job number a launcher fills in."""
    hcfg = compose_raw(overrides, with_hydra=True)
    with open_dict(hcfg):
        hcfg.hydra.job.num = job_num
    return hcfg


def resolved(hcfg: DictConfig, key: str) -> str:
    try:
        value = OmegaConf.select(hcfg, key, throw_on_missing=True)
    except (HydraException, OmegaConfBaseException, ValueError) as exc:
        raise ConfigError(f"{key}: {one_line(exc)}") from exc
    if value is None or not str(value).strip():
        raise ConfigError(f"{key}: empty; give a folder (the default is outputs/runs/${{run_stamp:}})")
    if not str(value).isprintable():  # a newline in a folder's name splits every line that names it
        raise ConfigError(f"{key}: {str(value)!r} holds a control character (a newline?); give a folder name "
                          "without one")
    return str(value)


def check_output_subdir(hcfg: DictConfig, folder: Path) -> None:
    """Hydra's copy of the config (``hydra.output_subdir``) stays inside the run's folder: ``../../configs`` there
    would replace the suite's own config.yaml."""
    sub = OmegaConf.select(hcfg, "hydra.output_subdir")
    if sub is None:
        return
    where = (folder / str(sub)).resolve()
    if where != folder.resolve() and folder.resolve() not in where.parents:
        raise ConfigError(f"hydra.output_subdir: {sub} is outside the run's folder ({folder}); Hydra's copy of the "
                          "config must stay inside it")


def run_dirs(hcfg: DictConfig) -> HydraDirs:
    """A single run's directory, as Hydra will resolve it from its node (``hydra_node``)."""
    run_dir = Path(resolved(hcfg, "hydra.run.dir"))
    check_output_subdir(hcfg, run_dir)
    return HydraDirs(run_dir=run_dir)


def sweep_dirs(points: list[tuple[list[str], list[str]]], nodes: list[DictConfig]) -> HydraDirs:
    """A sweep's directory and each point's job directory (``hydra.sweep.dir``/``hydra.sweep.subdir``, the
    subdir resolved with the job's number), from each point's Hydra node (``hydra_node(point, num)``): each its own
    folder directly under the sweep's, where the sweep summary finds it."""
    sweep_dir = Path(resolved(nodes[0], "hydra.sweep.dir"))
    require_outside_source(sweep_dir, "hydra.sweep.dir")
    dirs = HydraDirs(sweep_dir=sweep_dir)
    seen: dict[Path, str] = {}
    for (_, named), hcfg in zip(points, nodes, strict=True):
        label = " ".join(named) or "(all)"
        job_dir = sweep_dir / resolved(hcfg, "hydra.sweep.subdir")
        if job_dir.resolve().parent != sweep_dir.resolve():
            raise ConfigError(f"hydra.sweep.subdir: sweep point {label} would write to {job_dir}; each point needs "
                              f"its own folder directly under hydra.sweep.dir ({sweep_dir})")
        if job_dir.resolve() in seen:
            raise ConfigError(f"hydra.sweep.subdir: sweep points {seen[job_dir.resolve()]} and {label} would share "
                              f"{job_dir}; give each point its own folder (the default is ${{hydra.job.num}})")
        seen[job_dir.resolve()] = label
        check_output_subdir(hcfg, job_dir)
    return dirs
