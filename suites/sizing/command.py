"""``make size`` (``python -m suites size [sizing=<name>] [sizing.key=value ...] [bench overrides ...]``): which
profile, how many guests per GPU, how many GPUs and hosts, at what cost per user, for a mix of CAD users (by type)
and ML users, each figure with the range its confidence gives, at two QoS levels.

For each candidate profile of the GPU (configs/profile; on a host without a GPU one stand-in whose VMs per GPU allow
the counts, said) and each CAD user type, a consolidation sweep is measured, or reused from the store where an
earlier sizing measured the same thing (same GPU, driver, profile, policy and command line, the folders it writes to
aside): ML alone, one CAD guest alone, then 1, 2, ... CAD guests beside the ML guest, ``sizing.repeats`` times each.
Each curve is read for ``N_safe`` / ``N_point`` / knee at each QoS level (suites/capacity/curve.py), judged for
noise (noise.py: a busy host, smoke sizes, ... give ``inconclusive``, never a count), the mix solved (solver.py),
every profile's density tabled (density.py), the VM to provision said (provision.py), and one MLflow run records it,
its consolidations nested under it, with the report (``<sizing.out_dir>/<time>/sizing.{md,html,png}``).

The sizing is a campaign (suites/campaign/): planned by suites/sizing/campaign.py's ``plan_parts`` (what it reads
and composes) over the pure suites/sizing/plan.py (fitted to ``sizing.budget_s``: a plan that still does not fit
after every trim is refused before anything runs), made a campaign in
suites/sizing/campaign.py (a hard deadline: a consolidation that cannot end within what is left of the budget
does not start, said), run by the one executor, concluded in suites/sizing/conclude.py.
"""

from __future__ import annotations

import contextlib
import sys
import time

from hydra.errors import HydraException
from omegaconf.errors import OmegaConfBaseException
from rich.console import Console

from gpu_probe import inventory
from gpu_probe.inventory import Inventory
from suites.campaign import execute
from suites.config import device_file, stand_in
from suites.config.compose import compose
from suites.config.schema import one_line, register_configs
from suites.errors import BenchError, fail
from suites.pipeline.orchestrate import say
from suites.pipeline.prechecks import refuse_run_dirs, require_parseable
from suites.record.outdirs import require_output_dir
from suites.render.once import OnceConsole, OnceStream, SaidOnce
from suites.render.tables import console_width
from suites.run.outcome import EXIT_INTERRUPTED
from suites.run.shield import interrupt_reason, stop_on_signals
from suites.sizing.campaign import campaign_of, plan_parts
from suites.sizing.conclude import concluder
from suites.sizing.plan import SizingPlan
from suites.sizing.settings import SizingSettings, load_settings, split_args


def prepare(argv: list[str], out: Console) -> tuple[SizingSettings, Inventory, SizingPlan]:
    """Everything checked and composed before anything starts or is written; a problem ends it in one line."""
    register_configs()
    name, mine, overrides = split_args(argv)
    try:
        require_parseable(overrides)
        refuse_run_dirs(overrides, "sizing", "sizing.out_dir", "outputs/sizing")
        settings = load_settings(name, mine)
        require_output_dir(settings.out_dir, "sizing.out_dir")
        cfg, _ = compose(list(overrides))
        inv = stand_in.inventory_for(cfg, inventory.collect())  # make rehearse: the device's GPU
        played = dict(device_file.load(cfg.stand_in).get("work_s", {})) if cfg.stand_in else None  # its work too
        return settings, inv, plan_parts(settings, inv, overrides, out, trial=True, device_work=played)
    except (BenchError, HydraException, OmegaConfBaseException) as exc:
        fail(one_line(exc))


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if {"-h", "--help"} & set(argv):
        print(__doc__)
        return 0
    once = SaidOnce()  # a note repeated by every part and phase is said once, with its count at the end
    out, t0 = OnceConsole(once, width=console_width()), time.monotonic()
    with contextlib.redirect_stderr(OnceStream(once, sys.stderr)):  # type: ignore[type-var]
        stop_on_signals()
        try:
            settings, inv, plan = prepare(argv, out)
        except KeyboardInterrupt as exc:
            say(out)(f"size: {interrupt_reason(exc)} before anything started: nothing written")
            return EXIT_INTERRUPTED
        try:
            run = execute(campaign_of(settings, plan, t0), concluder(settings, (inv, plan), out), out)
        except KeyboardInterrupt:  # before its first consolidation: said by the executor
            return EXIT_INTERRUPTED
        if not run.concluded:  # stopped between parts or while concluding: said and recorded KILLED
            return EXIT_INTERRUPTED
        for line in once.summary():
            out.print(line, markup=False, highlight=False, soft_wrap=True)
        say(out)(f"size: {run.run_dir / 'sizing.html'} ({time.monotonic() - t0:.0f} s)")
    # a mix no measured profile serves is an answer (said, and recorded: recommended=none), not a fault
    return EXIT_INTERRUPTED if run.stopped else 0


if __name__ == "__main__":
    sys.exit(main())
