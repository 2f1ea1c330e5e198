"""``make gpu-check`` (``python -m suites gpu-check [key=value ...]``): the suite on one GPU, checked in one command,
one table (check | result | figure | expected) and one tarball to bring home.

Keys: ``data.root=DIR`` (real MNIST for checks b1 and c3; default $BENCH_DATA_ROOT), ``budget_s=540`` (the whole
command: 9 minutes with set-up, within a lent GPU's 10-minute call; a check whose estimate passes what is left does
not start, said; each check is held to its share), ``started_at=EPOCH_S`` (budget_s counts from then: the device
call's start, its set-up included, ``started_at=$(date +%s)``), ``only=a,b2,g`` (a subset),
``out_dir=outputs/gpu-check``, ``strict=true`` (a host without a GPU is an error, exit 2, and any skipped check fails
the command). The checks run in priority order as one campaign
(suites/gpucheck/campaign.py) through the campaign executor; settings.py reads the keys, conclude.py ends it,
report.py writes the summary. Writes ``<out_dir>/<time>/``: summary.json, summary.md,
device.json, logs/, runs/, study/, sizing/, compare/, mlflow-export/ and ``gpu-check-<time>.tar.gz`` (import it here
with ``python -m suites sync --run-dir <the unpacked folder>``). On a host without a GPU every check is ``skipped: no
GPU``, exit 0, in seconds. Runs with no project install too (the bare-image ``PYTHONPATH`` mode of
../shared/device/prepare.sh).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from rich.console import Console

from gpu_probe import inventory
from gpu_probe.vocab import NO_GPU
from suites.campaign import execute
from suites.config import device_file
from suites.config.schema import register_configs, run_stamp
from suites.errors import ConfigError
from suites.gpucheck import campaign, judges
from suites.gpucheck.campaign import GpuCheck
from suites.gpucheck.checks import Context, Row
from suites.gpucheck.conclude import concluder, rows_of
from suites.gpucheck.report import TARBALL_MAX, first_device_file, pack, table, write_summary
from suites.gpucheck.settings import parse
from suites.pipeline.orchestrate import console, say
from suites.record.outdirs import require_named, require_output_dir
from suites.run.outcome import EXIT_INTERRUPTED
from suites.run.shield import stop_on_signals


def no_gpu_rows(gc: GpuCheck) -> list[Row]:
    """A host without a GPU: every chosen check skipped, saying why, in a second (nothing recorded)."""
    status = gc.ctx.inv.gpu_status
    no_gpu = status if status.startswith(NO_GPU) else f"{NO_GPU} ({status})"
    return [Row(c, f"{judges.SKIPPED}: {no_gpu}") for c in gc.chosen]


def run_checks(gc: GpuCheck, t0: float, budget_s: float, out: Console) -> tuple[list[Row], str]:
    """The checks through the campaign executor (on a GPU host), else every one skipped; the rows and why it
    stopped early ('' where it did not)."""
    if not gc.ctx.inv.has_gpu:
        rows = no_gpu_rows(gc)
        write_summary(gc, rows, time.monotonic() - t0)
        return rows, ""
    if not gc.measured:
        say(out)("gpu-check: each check's seconds are estimates (no gpu-check on this GPU wrote check_s to its "
                 "device file yet): a check whose estimate passes what is left of budget_s does not start")
    stop_on_signals()
    run = execute(campaign.campaign_of(gc, t0, budget_s), concluder(gc, t0), out)
    return rows_of(gc, run), run.stopped


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if {"-h", "--help"} & set(argv):
        print(__doc__)
        return 0
    t0, out = time.monotonic(), console()
    try:
        settings = parse(argv)
        if settings.started_at is not None:  # budget_s from the device call's start, its set-up included
            t0 -= max(time.time() - settings.started_at, 0.0)
        require_named(settings.out_dir, "gpu-check: out_dir")  # out_dir= would put the run in the working directory
        root = Path(settings.out_dir) / run_stamp()
        require_output_dir(root, "gpu-check: out_dir")  # before any GPU time is spent, not at the summary
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    inv = inventory.collect()
    if not inv.has_gpu and settings.strict:
        print(f"error: gpu-check strict=true: no GPU on this host ({inv.gpu_status})", file=sys.stderr)
        return 2
    register_configs()
    # this GPU's device file, found by the NVML name it records (a name is no file name: 'NVIDIA H200')
    estimates, measured = campaign.estimates_for(device_file.of_gpu(str(inv.gpus[0].get("name"))) if inv.gpus
                                                 else None)
    ctx = Context(root, inv, settings.data_root, t0 + settings.budget_s, say(out))
    ctx.timings_file = lambda: write_summary(gc, list(gc.rows.values()), time.monotonic() - t0)[0]
    gc = GpuCheck(ctx, settings.only, estimates, measured)
    rows, stopped = run_checks(gc, t0, settings.budget_s, out)
    first = first_device_file(root) if inv.has_gpu and not stopped else None
    if first is not None:
        say(out)(f"gpu-check: {first} written from what it measured, the first device file of {inv.gpus[0].get('name')}"
                 f": make rehearse GPU={first.stem} plays it (review it, then commit it)")
    tarball = pack(root)
    gpu = ", ".join(str(g.get("name")) for g in inv.gpus) or inv.gpu_status
    out.print(table(rows, f"gpu-check on {gpu} ({time.monotonic() - t0:.0f} s; {root})"))
    size = tarball.stat().st_size
    say(out)(f"gpu-check: {root / 'summary.md'}" + (f" (stopped: {stopped})" if stopped else ""))
    say(out)(f"bring back: {tarball} ({size / 2**20:.1f} MiB"
             + (", over the 16 MiB a device call returns: leave runs/ behind)" if size > TARBALL_MAX else ")"))
    if stopped:
        return EXIT_INTERRUPTED
    failed = [r for r in rows if r.result.startswith((judges.FAILED, judges.INCONCLUSIVE))]  # neither has passed
    skipped = [r for r in rows if r.result.startswith(judges.SKIPPED)]
    return 1 if failed or (settings.strict and skipped) else 0


if __name__ == "__main__":
    sys.exit(main())
