"""``make study`` (``python -m suites study [study.key=value ...] [bench overrides ...]``): the reference
study reproduced in one command.

Episode 1 (GPU vs no GPU, scaling over 1..min(4, GPUs), passthrough vs vGPU,
one 4-GPU guest vs four 1-GPU guests) and episode 2 (CAD + ML sharing a GPU
over the M60 Q profiles, emulated on whatever NVIDIA GPU is present, and a
consolidation sweep) run as comparisons nested under one MLflow study run;
then one report, ``outputs/study/<time>/report.{md,html}`` + PNGs, puts the
study's figure for every row beside this host's and lists what was skipped and
why. The study's runs are also exported to files beside the report
(``mlflow-export/``), so a GPU host without network sends back one tarball:
``python -m suites sync --run-dir <study dir>`` imports it.

``--plan`` prints the plan (parts, sizes, repeats, estimate, skips) and
starts nothing. Every other argument is a bench override given to every part
(``data.root=...``, ``tracking_uri=...``, ``profile.vcpus=4``).
"""

from __future__ import annotations

import sys
import time

from hydra.errors import HydraException
from omegaconf.errors import OmegaConfBaseException

from suites.campaign import execute
from suites.config.schema import one_line, register_configs
from suites.errors import BenchError, fail
from suites.pipeline.orchestrate import console, say
from suites.run.outcome import EXIT_INTERRUPTED
from suites.run.shield import stop_on_signals
from suites.study.campaign import campaign_of, show_plan, study_of
from suites.study.conclude import concluder
from suites.study.settings import split_args


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if {"-h", "--help"} & set(argv):
        print(__doc__)
        return 0
    started = time.monotonic()  # the budget counts from here: the trial runs' seconds are the study's too
    register_configs()
    mine, overrides = split_args([a for a in argv if a != "--plan"])
    out = console()
    try:
        study = study_of(mine, overrides)
        sp, campaign = campaign_of(study, "--plan" not in argv, started, out)
    except (BenchError, HydraException, OmegaConfBaseException) as exc:
        fail(one_line(exc))
    show_plan(out, sp, study.gpu_status)
    if "--plan" in argv:
        return 0
    stop_on_signals()
    t0 = time.time()
    try:
        run = execute(campaign, concluder(study, sp, out), out)
    except KeyboardInterrupt:  # before its first part: said by the executor
        return EXIT_INTERRUPTED
    say(out)(f"study: {run.run_dir / 'report.html'} ({time.time() - t0:.0f} s); elsewhere: "
             f"`python -m suites sync --run-dir {run.run_dir}`")
    return run.code


if __name__ == "__main__":
    sys.exit(main())
