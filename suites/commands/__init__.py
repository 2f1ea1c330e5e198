"""The suite's commands, one module each: ``python -m suites <command> [args]`` (console script
``gpu-mixed-bench``, the same) and the Makefile targets run them. They assemble the layers below; the policies
live there. ``study``'s command sits with the rest of the reference study in :mod:`suites.study`.

Each command module has ``main(argv) -> exit status``; a command is imported only when it is asked for (``sync``
does not load torch or Hydra's sweeper), by the dotted name in :data:`COMMANDS`.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import signal
import sys

from suites import process_gc
from suites.errors import renamed_settings_in_one_line
from suites.run.shield import SIGNALS, honour, interrupt_reason, reason, stop_on_signals

EXIT_INTERRUPTED = 130  # suites.run.outcome.EXIT_INTERRUPTED (a heavy import for one number)

__all__ = ["COMMANDS", "TELEMETRY_SWITCHES", "main", "no_mlflow_telemetry_unless_asked", "usage"]

# name -> (module, what it does, its make target); in the order --help lists them
COMMANDS: dict[str, tuple[str, str, str]] = {
    "bench": ("suites.commands.bench", "compose, run and record a scenario, comparison or sweep (Hydra overrides)",
              "make bench"),
    "study": ("suites.study.command", "the reference study, planned to a time budget, with its report",
              "make study"),
    "size": ("suites.sizing.command", "which profile, guests per GPU, GPUs and cost for a mix, with its confidence",
             "make size"),
    "report": ("suites.commands.report", "a mixed / consolidation report (or --study's) read back from MLflow",
               "make report"),
    "compare": ("suites.compare.command", "what changed between two runs: every figure's B / A, its interval "
                "and verdict, the set-up's differences; --fail-on for nightly jobs, --history", "make compare"),
    "publish": ("suites.commands.publish", "a run as a result bundle (its system, command, figures with their "
                "raw repeats, plots), judged by the run rules", "make publish"),
    "check-results": ("suites.commands.check_results", "a bundle judged by the run rules (docs/run-rules.md), every "
                      "figure recomputed from its repeats", "make check-results"),
    "catalog": ("suites.commands.catalog", "a static site of bundles side by side, beside the reference study's",
                "make catalog"),
    "rerun": ("suites.commands.rerun", "a bundle's command run again on this host", "make rerun"),
    "sync": ("suites.commands.sync", "import runs recorded while a store was down, or a run tree brought back",
             ""),
    "gpu-check": ("suites.gpucheck.command", "every GPU path of the suite, checked within a budget",
                  "make gpu-check"),
    "rehearse": ("suites.commands.rehearse", "the GPU path at a GPU's measured speed, on any host: checks, not "
                 "measurements", "make rehearse"),
    "bench-ml": ("suites.commands.selfmeasure_ml", "a workload bare vs as a guest, interleaved, with a verdict",
                 "make bench-ml"),
    "bench-vm": ("suites.commands.selfmeasure_vm", "a workload bare vs in the suite's own VM", "make bench-vm"),
    "bench-peer": ("suites.commands.selfmeasure_peer", "cifar10-torch vs the published airbench94, interleaved",
                   "make bench-peer"),
    "bench-harness": ("suites.commands.selfmeasure_harness", "the suite's own cost per repeat and measured share, "
                      "beside this host's floors", "make bench-harness"),
}


def usage() -> str:
    width = max(map(len, COMMANDS))
    lines = ["usage: python -m suites <command> [args]   (gpu-mixed-bench <command> [args] is the same)", "",
             "commands:"]
    lines += [f"  {name:<{width}}  {what}" + (f"  ({make})" if make else "")
              for name, (_, what, make) in COMMANDS.items()]
    lines += ["", "python -m suites <command> --help: that command's own arguments"]
    return "\n".join(lines)


# MLflow's own switches for its usage telemetry (docs/clusters.md): either, set by the user, is the user's choice
TELEMETRY_SWITCHES = ("MLFLOW_DISABLE_TELEMETRY", "DO_NOT_TRACK")


def no_mlflow_telemetry_unless_asked() -> None:
    """MLflow 3, when imported, starts a thread that fetches a configuration from MLflow's servers and sends usage
    events there: network traffic and a thread waking every second beside a run's timed windows, and its join at
    every exit (~0.3 s here). The suite's processes, and the guests and servers they start (they inherit it), run
    without it unless the user set either switch; then theirs stands. Before anything imports mlflow: it decides at
    import."""
    if not any(name in os.environ for name in TELEMETRY_SWITCHES):
        os.environ[TELEMETRY_SWITCHES[0]] = "true"


def main(argv: list[str] | None = None, *, own_process: bool = False) -> int:
    """The command ``argv`` names, run; its exit status. ``own_process``: this process is the command's own (``python
    -m suites``, the console script), so its libraries load under :func:`suites.process_gc.loading`."""
    args = sys.argv[1:] if argv is None else argv
    if not args or args[0] in ("-h", "--help", "help"):
        print(usage())
        return 0
    name, rest = args[0], args[1:]
    if name not in COMMANDS:
        print(f"error: no command {name!r}; the commands: {', '.join(COMMANDS)} (python -m suites --help)",
              file=sys.stderr)
        return 2
    renamed_settings_in_one_line()
    no_mlflow_telemetry_unless_asked()
    stop_on_signals()  # SIGTERM and SIGHUP as Ctrl-C in every command: one line and 130, never a silent death
    try:
        with process_gc.loading() if own_process else contextlib.nullcontext():
            module = importlib.import_module(COMMANDS[name][0])
        code = int(module.main(rest) or 0)
    except KeyboardInterrupt as exc:  # Ctrl-C while its libraries load, or past a command's own guards: one line
        why = interrupt_reason(exc)
        honour()  # this is that interrupt's end: nothing more is owed
        for s in SIGNALS:  # the command is ending: a second press ends it as this one does (it gave rc -2 or 0)
            signal.signal(s, signal.SIG_IGN)
        print(f"{name}: {why}", file=sys.stderr)
        return EXIT_INTERRUPTED
    except ModuleNotFoundError as exc:  # a Python without the suite's dependencies (BARE=1 with no wheels on its path)
        if exc.name is None or exc.name.split(".")[0] in ("suites", "gpu_probe"):
            raise  # the suite's own: a broken checkout, its traceback is the clue
        print(f"error: {name}: {sys.executable} has no {exc.name.split('.')[0]!r}: use the project's .venv (make "
              "setup), or BARE=1 with prepare.sh's wheels on PYTHONPATH", file=sys.stderr)
        return 2
    signum = honour()  # the last place a held-off signal is honoured: a command that finished anyway exits 130
    if signum is not None:
        print(f"{name}: {reason(signum)}: held off until what it was doing was recorded; stopped there",
              file=sys.stderr)
        return EXIT_INTERRUPTED
    return code
