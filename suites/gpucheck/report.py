"""``make gpu-check``'s report: one summary (summary.json, summary.md), the device file of what it measured
(device.json: copy it to configs/device/<gpu>.json for ``make rehearse``), the console's table of checks and the
tarball to bring home."""

from __future__ import annotations

import json
import sys
import tarfile
from pathlib import Path

from rich.table import Table

from suites.config import device_file
from suites.errors import redact
from suites.gpucheck import judges
from suites.gpucheck.campaign import GpuCheck
from suites.gpucheck.checks import Row
from suites.record.rundir import write_atomic
from suites.render import markdown, tables
from suites.run_kinds import RunKind

__all__ = ["TARBALL_MAX", "first_device_file", "pack", "table", "write_summary"]

TARBALL_MAX = 16 * 2**20  # what a lent GPU's device call returns


def write_summary(gc: GpuCheck, rows: list[Row], elapsed: float) -> list[Path]:
    """summary.json (rows, seconds per check, timings for the study planner, inventory), summary.md and, on a GPU,
    device.json (what make rehearse plays this GPU at: copy it to configs/device/<gpu>.json), each with what the
    harness cost per check (its wall, work and harness seconds: device_clock); the files."""
    ctx, root = gc.ctx, gc.ctx.root
    root.mkdir(parents=True, exist_ok=True)
    summary = {"kind": RunKind.GPU_CHECK, "command": redact(" ".join(sys.argv)), "elapsed_s": round(elapsed, 1),
               "inventory": ctx.inv.as_dict(), "timings": ctx.timings, "check_s": gc.seconds,
               "estimates": {"check_s": gc.estimates, "measured": gc.measured, "shares_s": gc.shares},
               "harness_s": {c: clock.as_json() for c, clock in gc.clocks.items()},
               "rows": [{"check": r.check, "title": r.title, "result": r.result, "figure": r.figure,
                         "expected": r.expected, "data": r.data} for r in rows]}
    write_atomic(root / "summary.json", json.dumps(summary, indent=2, default=str))
    files = [root / "summary.json", root / "summary.md"]
    made = device_file.measured(ctx.inv, ctx.results, ctx.timings)
    if made is not None:
        clocks = {c: clock.as_json() for c, clock in gc.clocks.items()}  # what the harness costs on this device
        write_atomic(root / "device.json", json.dumps({**made, "check_s": gc.seconds, "harness_s": clocks}, indent=2,
                                                      default=str))
        files.append(root / "device.json")
    lines = [f"# gpu-check {root.name}", "", f"Host: {ctx.inv.cpu_model}; GPU: "
             f"{', '.join(str(g.get('name')) for g in ctx.inv.gpus) or ctx.inv.gpu_status}; driver "
             f"{ctx.inv.driver_version}; git {ctx.inv.git_sha}; {elapsed:.0f} s", "",
             *markdown.table(("check", "result", "figure", "expected", "s", "work s", "harness s"),
                             [(f"{r.check} {r.title}", r.result, r.figure, r.expected, gc.seconds.get(r.check, ""),
                               seconds(gc, r.check, "work_s"), seconds(gc, r.check, "harness_s")) for r in rows])]
    lines += ["", "s: the check's wall; work s: the timed windows of the runs it recorded; harness s: the rest "
              "(processes, imports, set-up, recording): what make rehearse charges for it once this file is the "
              "GPU's device file"]
    write_atomic(root / "summary.md", "\n".join(lines) + "\n")
    return files



def first_device_file(root: Path) -> Path | None:
    """The device.json gpu-check wrote in ``root``, copied to configs/device/<gpu>.json where its GPU has no device
    file yet (an H100): what make rehearse GPU=<gpu> plays from then on; None where it has one or none was written."""
    try:
        made = json.loads((root / "device.json").read_text())
    except (OSError, ValueError):
        return None
    return device_file.first_of(made) if isinstance(made, dict) else None


def seconds(gc: GpuCheck, check: str, figure: str) -> str:
    clock = gc.clocks.get(check)
    return f"{clock.as_json()[figure]:.1f}" if clock is not None else ""


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
