"""``make gpu-check`` (``python -m suites gpu-check [key=value ...]``): the suite on one GPU, checked in one command,
one table (check | result | figure | expected) and one tarball to bring home.

Keys: ``data.root=DIR`` (real MNIST for checks b1 and c3; default $BENCH_DATA_ROOT), ``budget_s=540`` (the whole
command: 9 minutes with set-up, within a lent GPU's 10-minute call; a check whose estimate passes what is left does
not start, said), ``only=a,b2,g`` (a subset), ``out_dir=outputs/gpu-check``, ``strict=true`` (a host without a GPU is
an error, exit 2, and any skipped check fails the command). The checks run in priority order as one campaign
(suites/gpucheck/campaign.py) through the campaign executor. Writes ``<out_dir>/<time>/``: summary.json, summary.md,
device.json, logs/, runs/, study/, sizing/, compare/, mlflow-export/ and ``gpu-check-<time>.tar.gz`` (import it here
with ``python -m suites sync --run-dir <the unpacked folder>``). On a host without a GPU every check is ``skipped: no
GPU``, exit 0, in seconds. Runs with no project install too (the bare-image ``PYTHONPATH`` mode of
../shared/device/prepare.sh).
"""

from __future__ import annotations

import math
import os
import sys
import tarfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from gpu_probe import inventory
from gpu_probe.shapes import JsonObject
from gpu_probe.vocab import NO_GPU
from suites.campaign import execute
from suites.config import device_file
from suites.config.schema import register_configs, run_stamp
from suites.errors import ConfigError
from suites.gpucheck import campaign, judges
from suites.gpucheck.campaign import GpuCheck
from suites.gpucheck.checks import Context, Row
from suites.pipeline.orchestrate import console, say
from suites.record.outdirs import require_named, require_output_dir
from suites.render import tables
from suites.run.outcome import EXIT_INTERRUPTED
from suites.run.shield import stop_on_signals

KEYS = ("data.root", "budget_s", "only", "out_dir", "strict")
TARBALL_MAX = 16 * 2**20


def parse(argv: list[str]) -> JsonObject:
    """``key=value`` arguments; anything else is one ConfigError."""
    args: JsonObject = {"data.root": os.environ.get("BENCH_DATA_ROOT"), "budget_s": campaign.BUDGET_S, "only": "",
                            "out_dir": "outputs/gpu-check", "strict": False}
    for a in argv:
        key, eq, value = a.partition("=")
        if not eq or key not in KEYS:
            raise ConfigError(f"gpu-check: unknown argument {a!r} (keys: {', '.join(KEYS)})")
        args[key] = value
    try:
        args["budget_s"] = float(args["budget_s"])
    except ValueError:
        raise ConfigError(f"gpu-check: budget_s must be seconds, got {args['budget_s']!r}") from None
    if not math.isfinite(args["budget_s"]) or args["budget_s"] <= 0:
        raise ConfigError(f"gpu-check: budget_s must be a positive number of seconds, got {args['budget_s']}")
    if str(args["strict"]).lower() not in ("true", "false"):
        raise ConfigError(f"gpu-check: strict must be true or false, got {args['strict']!r}")
    args["strict"] = str(args["strict"]).lower() == "true"
    only = [c for c in str(args["only"]).split(",") if c]
    unknown = [c for c in only if c not in campaign.PRIORITY]
    if unknown:
        raise ConfigError(f"gpu-check: only= names unknown checks {', '.join(unknown)} "
                          f"(known: {', '.join(campaign.PRIORITY)})")
    args["only"] = only
    return args


def table(rows: list[Row], title: str) -> Table:
    """One row per check; a result several rows share (every check skipped on a host without a GPU) is said once,
    under the table. Where nothing ran (no GPU), no figure or expectation either: those are in summary.md."""
    cells, shared = tables.fold_shared([r.result for r in rows])
    t = Table(title=title, title_justify="left", caption="\n".join(shared) or None, caption_justify="left")
    ran = [r for r in rows if not r.result.startswith(judges.SKIPPED)]
    cols = ("check", "result", *(("figure", "expected") if ran else ()))
    for col in cols:
        t.add_column(col, overflow="fold")
    for r, cell in zip(rows, cells, strict=True):
        amber = r.result.startswith((judges.SKIPPED, judges.INCONCLUSIVE))
        color = "green" if r.result == judges.OK else ("yellow" if amber else "red")
        t.add_row(f"{r.check} {r.title}", f"[{color}]{cell}[/{color}]", *((r.figure, r.expected) if ran else ()))
    return t


def pack(root: Path) -> Path:
    tarball = root / f"gpu-check-{root.name}.tar.gz"
    with tarfile.open(tarball, "w:gz") as tar:
        for p in sorted(root.iterdir()):
            if p != tarball:
                tar.add(p, arcname=f"{root.name}/{p.name}")
    return tarball


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
        campaign.write_summary(gc, rows, time.monotonic() - t0)
        return rows, ""
    if not gc.measured:
        say(out)("gpu-check: each check's seconds are estimates (no gpu-check on this GPU wrote check_s to its "
                 "device file yet): a check whose estimate passes what is left of budget_s does not start")
    stop_on_signals()
    run = execute(campaign.campaign_of(gc, t0, budget_s), campaign.conclude(gc, t0), out)
    return campaign.rows_of(gc, run), run.stopped


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if {"-h", "--help"} & set(argv):
        print(__doc__)
        return 0
    t0, out = time.monotonic(), console()
    try:
        args = parse(argv)
        require_named(args["out_dir"], "gpu-check: out_dir")  # out_dir= would put the run in the working directory
        root = Path(args["out_dir"]) / run_stamp()
        require_output_dir(root, "gpu-check: out_dir")  # before any GPU time is spent, not at the summary
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    inv = inventory.collect()
    if not inv.has_gpu and args["strict"]:
        print(f"error: gpu-check strict=true: no GPU on this host ({inv.gpu_status})", file=sys.stderr)
        return 2
    register_configs()
    # this GPU's device file, found by the NVML name it records (a name is no file name: 'NVIDIA H200')
    estimates, measured = campaign.estimates_for(device_file.of_gpu(str(inv.gpus[0].get("name"))) if inv.gpus
                                                 else None)
    ctx = Context(root, inv, args["data.root"], t0 + args["budget_s"], say(out))
    ctx.timings_file = lambda: campaign.write_summary(gc, list(gc.rows.values()), time.monotonic() - t0)[0]
    gc = GpuCheck(ctx, args["only"], estimates, measured)
    rows, stopped = run_checks(gc, t0, args["budget_s"], out)
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
    return 1 if failed or (args["strict"] and skipped) else 0


if __name__ == "__main__":
    sys.exit(main())
