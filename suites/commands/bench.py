"""``python -m suites bench [overrides]`` (``make bench``): compose, validate, run, report, record.

Every run the command line asks for (a comparison's phases and each guest group's workload included) is composed
once, before Hydra takes over (suites/pipeline/command_line.py), so a bad override is one ``error:`` line (exit 2)
within a second, before any guest process exists; that composition is what runs. A command with Hydra flags
(``-m``, ``--cfg``, ``--config-dir``) is composed by Hydra, per job.
"""

from __future__ import annotations

import sys

import hydra
from hydra.errors import HydraException
from omegaconf.errors import OmegaConfBaseException

from suites.config.schema import CONFIG_DIR, one_line, register_configs
from suites.errors import BenchError, fail, renamed_settings_in_one_line
from suites.pipeline.command_line import parse_command, precheck, sweep_exit_code
from suites.pipeline.jobs import SweepState, task


def main(argv: list[str] | None = None) -> int:
    """The bench command on ``argv`` (default: this process's arguments). Hydra reads its arguments from sys.argv:
    it is set here, once, to them and the folders the precheck pinned, so Hydra writes where the precheck looked;
    its first word is this module's file, so the command a run records (``bench.command``) is one that runs it
    again: from ``python -m suites bench`` (make bench) the word 'bench' would be lost with the rest of argv, and a
    bundle's command made ``python -m suites scenario=...``, which make rerun refuses."""
    args = sys.argv[1:] if argv is None else list(argv)
    renamed_settings_in_one_line()  # also when run as python -m suites.commands.bench
    register_configs()
    try:
        line = parse_command(args)
        checked = precheck(line)
    except (BenchError, HydraException, OmegaConfBaseException, ValueError) as exc:
        fail(one_line(exc))
    sys.argv = [__file__, *args, *checked.dirs.pins]
    sweep = SweepState(checked.named) if line.multirun else None
    try:
        hydra.main(config_path=str(CONFIG_DIR), config_name="config", version_base="1.3")(task(checked.composed,
                                                                                               sweep))()
    finally:
        if checked.claim is not None:  # held to here: the folder is this command's while it runs
            checked.claim.release()
            checked.claim.tidy()
    if sweep is not None and checked.dirs.sweep_dir is not None:
        return sweep_exit_code(checked.dirs.sweep_dir, sweep)
    return 0


if __name__ == "__main__":
    sys.exit(main())
