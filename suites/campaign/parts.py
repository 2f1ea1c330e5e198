"""A campaign's parts composed before anything starts, one way for every campaign command (``make study``'s parts,
``make size``'s consolidations): each part's command line composed as ``make bench`` composes one (phases, groups,
its folders checked as Hydra will resolve them), a part that does not compose one ConfigError naming it."""

from __future__ import annotations

from hydra.errors import HydraException
from omegaconf.errors import OmegaConfBaseException

from suites.config.compose import Composition, compose_run
from suites.config.schema import one_line
from suites.errors import BenchError, ConfigError
from suites.pipeline.prechecks import check_out_dirs

__all__ = ["compose_part"]


def compose_part(command_line: list[str], what: str) -> Composition:
    """``command_line`` composed and the folders it writes checked; ``what`` names the part in the one error line
    (``study part scaling: ...``, ``sizing part m60-2q/timeslice: ...``)."""
    try:
        comp = compose_run(command_line)
    except (BenchError, HydraException, OmegaConfBaseException, ValueError) as exc:
        raise ConfigError(f"{what}: {one_line(exc)}") from exc
    check_out_dirs(comp.cfg)
    return comp
