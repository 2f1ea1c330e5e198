"""``make gpu-check`` (``python -m suites gpu-check [key=value ...]``): every GPU path of the suite, checked in
one command, one table (check | result | figure | expected) and one tarball to bring home.

Keys: ``data.root=DIR`` (real MNIST for check b1; default $BENCH_DATA_ROOT), ``budget_s=480`` (the whole command,
the study sized to what is left), ``only=a,b2,g`` (a subset), ``out_dir=outputs/gpu-check``, ``strict=true`` (a host
without a GPU is an error, exit 2, and any skipped check fails the command). Writes
``<out_dir>/<time>/``: summary.json, summary.md, logs/, runs/, study/, mlflow-export/ and
``gpu-check-<time>.tar.gz`` (import it here with ``python -m suites sync --run-dir <the unpacked folder>``).
On a host without a GPU every check is ``skipped: no GPU``, exit 0, in seconds. Runs with no project install too
(the bare-image ``PYTHONPATH`` mode of ../shared/device/prepare.sh).
"""

from __future__ import annotations

import json
import math
import os
import sys
import tarfile
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from gpu_probe import inventory
from gpu_probe.shapes import JsonObject
from gpu_probe.vocab import NO_GPU
from suites import store_keys as keys
from suites.commands.rehearse import device_file
from suites.config.schema import EXPERIMENT, run_stamp
from suites.errors import ConfigError, redact
from suites.gpucheck import checks, judges
from suites.gpucheck.checks import Context, Row
from suites.pipeline.orchestrate import best_effort, console, say
from suites.record.export import gather_and_export
from suites.record.outdirs import require_named, require_output_dir
from suites.record.rundir import write_atomic
from suites.render import tables

KEYS = ("data.root", "budget_s", "only", "out_dir", "strict")
TARBALL_MAX = 16 * 2**20


def parse(argv: list[str]) -> JsonObject:
    """``key=value`` arguments; anything else is one ConfigError."""
    args: JsonObject = {"data.root": os.environ.get("BENCH_DATA_ROOT"), "budget_s": 480.0, "only": "",
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
    unknown = [c for c in only if c not in checks.CHECKS]
    if unknown:
        raise ConfigError(f"gpu-check: only= names unknown checks {', '.join(unknown)} "
                          f"(known: {', '.join(checks.CHECKS)})")
    args["only"] = only
    return args


def plan(ctx: Context, root: Path) -> list[tuple[str, Any]]:
    """Every check, in order, as (name, what runs it); the study (h) reads the timings the others measured."""
    ctx.timings_file = lambda: write_summary(root, ctx, [], 0.0)
    return [(c.id, lambda c=c: c.run(ctx)) for c in checks.CHECKS.values()]


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


def write_summary(root: Path, ctx: Context, rows: list[Row], elapsed: float) -> Path:
    """summary.json (rows, timings for the study planner, inventory) and summary.md; the json's path."""
    root.mkdir(parents=True, exist_ok=True)
    summary = {"kind": "gpu-check", "command": redact(" ".join(sys.argv)), "elapsed_s": round(elapsed, 1),
               "inventory": ctx.inv.as_dict(), "timings": ctx.timings,
               "rows": [{"check": r.check, "title": r.title, "result": r.result, "figure": r.figure,
                         "expected": r.expected, "data": r.data} for r in rows]}
    path = root / "summary.json"
    write_atomic(path, json.dumps(summary, indent=2, default=str))
    measured = device_file(ctx.inv, ctx.results, ctx.timings)
    if measured is not None:  # what make rehearse plays this GPU at: copy it to configs/device/<gpu>.json
        write_atomic(root / "device.json", json.dumps(measured, indent=2, default=str))
    lines = [f"# gpu-check {root.name}", "", f"Host: {ctx.inv.cpu_model}; GPU: "
             f"{', '.join(str(g.get('name')) for g in ctx.inv.gpus) or ctx.inv.gpu_status}; driver "
             f"{ctx.inv.driver_version}; git {ctx.inv.git_sha}; {elapsed:.0f} s", "",
             "| check | result | figure | expected |", "| --- | --- | --- | --- |"]
    lines += [f"| {r.check} {r.title} | {r.result} | {r.figure} | {r.expected} |".replace("\n", " ") for r in rows]
    write_atomic(root / "summary.md", "\n".join(lines) + "\n")
    return path


def record(root: Path, rows: list[Row], out: Console) -> None:
    """Every run the checks recorded nested under one gpu-check run, exported to files beside them (what
    ``suites.commands.sync --run-dir`` imports)."""
    uri = f"sqlite:///{root / 'mlflow.db'}"
    if not (root / "mlflow.db").exists():
        return
    tags = {keys.KIND: "gpu-check", keys.ROLE: "gpu-check", **{keys.check(r.check): r.result for r in rows}}
    gather_and_export(uri, EXPERIMENT, f"gpu-check-{root.name}", tags, [root / "summary.json", root / "summary.md"],
                      root)


def pack(root: Path) -> Path:
    tarball = root / f"gpu-check-{root.name}.tar.gz"
    with tarfile.open(tarball, "w:gz") as tar:
        for p in sorted(root.iterdir()):
            if p != tarball:
                tar.add(p, arcname=f"{root.name}/{p.name}")
    return tarball


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
    ctx = Context(root, inv, args["data.root"], t0 + args["budget_s"], say(out))
    rows: list[Row] = []
    no_gpu = inv.gpu_status if inv.gpu_status.startswith(NO_GPU) else f"{NO_GPU} ({inv.gpu_status})"
    for name, run in plan(ctx, root):
        if args["only"] and name not in args["only"]:
            continue
        if not inv.has_gpu:
            rows.append(Row(name, f"{judges.SKIPPED}: {no_gpu}"))
            continue
        rows.append(checks.run_check(ctx, name, run))
    elapsed = time.monotonic() - t0
    write_summary(root, ctx, rows, elapsed)
    best_effort(out, "gpu-check MLflow record", lambda: record(root, rows, out))
    tarball = pack(root)
    gpu = ", ".join(str(g.get("name")) for g in inv.gpus) or inv.gpu_status
    out.print(table(rows, f"gpu-check on {gpu} ({elapsed:.0f} s; {root})"))
    size = tarball.stat().st_size
    say(out)(f"gpu-check: {root / 'summary.md'}")
    say(out)(f"bring back: {tarball} ({size / 2**20:.1f} MiB"
             + (", over the 16 MiB a device call returns: leave runs/ behind)" if size > TARBALL_MAX else ")"))
    failed = [r for r in rows if r.result.startswith((judges.FAILED, judges.INCONCLUSIVE))]  # neither has passed
    skipped = [r for r in rows if r.result.startswith(judges.SKIPPED)]
    return 1 if failed or (args["strict"] and skipped) else 0


if __name__ == "__main__":
    sys.exit(main())
