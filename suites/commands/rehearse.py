"""``make rehearse GPU=h200`` (``python -m suites rehearse --gpu h200 [--only a,b1] [--budget-s 540]``): ``make
gpu-check``'s own campaign played at a GPU's measured speed on any host, before a GPU is lent.

Every test on a CPU host runs at CPU speed, where a replay lasts seconds, a step tens of milliseconds and a data set
fits any cap; on a GPU the same code meets windows a tenth as long, replays shorter than the ML window and data sets
past a small profile's framebuffer. The rehearsal runs gpu-check's campaign (its checks in their order, through the
campaign executor, its deadline, exports and judges) with each check's training at the device file's step time
(``fixed-step``) and its CAD replay at the device file's frame time per viewset (``fixed-frame``), from
``configs/device/<gpu>.json`` (written by ``make gpu-check`` from what it measured on that GPU). What only the GPU can
say (NVML, CUDA's allocator, EGL, pycuda, MPS) is not played: its row says so and its time is its estimate. A played
check costs its work at the device's speeds plus the harness's cost (the device's where gpu-check measured it, else
this host's, said) on the device's clock, so the rehearsal fails where the device call would overrun its budget or a
check its share ("would overrun") or where a check's judge misses; beside it, mnist-torch's tensors with all 60,000
images are counted against each profile's framebuffer with the device's CUDA context.

One table of checks, one of the memory counts, a verdict; exit 1 on a miss. Nothing it prints is a measurement: it
is labelled ``rehearsal``, its runs go to a temporary store that is removed, and ``strict=true`` refuses it.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from rich.console import Console
from rich.table import Table

from gpu_probe.shapes import JsonObject
from suites.config import device_file
from suites.config.schema import register_configs
from suites.errors import ConfigError
from suites.gpucheck import (
    BUDGET_S,
    PRIORITY,
    Check,
    Played,
    StandIn,
    data_checks,
    missed,
    over_share,
    overrun,
    play,
    rehearsed,
    removed,
)
from suites.render import tables
from suites.run.shield import stop_on_signals
from suites.workloads.device_bytes import UNSEEN_SHARE, mnist_torch_peak_MiB


def arguments(argv: list[str] | None) -> tuple[argparse.Namespace, list[str]]:
    parser = argparse.ArgumentParser(prog="python -m suites rehearse", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--gpu", default="h200", help="h200, or a device file (.json)")
    parser.add_argument("--only", default="", help="a subset of gpu-check's checks, e.g. a,b1,j")
    parser.add_argument("--budget-s", type=float, default=BUDGET_S, help="gpu-check's budget_s (540)")
    return parser.parse_known_args(argv)


def refusal(args: argparse.Namespace, rest: list[str]) -> str:
    """Why the arguments are refused ('' where they are not)."""
    if any(a.replace(" ", "").lower() in ("strict=true", "strict=1") for a in rest):
        return "strict=true: a rehearsal is no measurement (stand-ins at a device's figures); run the suite on the GPU"
    if rest:
        return f"unknown argument(s) {' '.join(rest)}"
    unknown = [c for c in args.only.split(",") if c and c not in PRIORITY]
    if unknown:
        return f"--only: no such check {', '.join(unknown)} (gpu-check's: {', '.join(PRIORITY)})"
    if not 0 < args.budget_s <= 86_400:
        return f"--budget-s must be seconds in (0, 86400], got {args.budget_s:g}"
    return ""


def clock_caption(played: Played, dev: JsonObject) -> str:
    """What the table's seconds are: whose harness cost each played check's charge holds."""
    whose = sorted({w for c, w in played.harness_of.items() if w != "estimated"})
    work = sum(played.work.get(c, 0.0) for c, w in played.harness_of.items() if w != "estimated")
    return (f"device s: each check's seconds on the device's clock: a played check's work at {dev['gpu']}'s speeds "
            f"({work:.0f} s in all) plus {' and '.join(whose) or 'no'} harness cost"
            + (" (no gpu-check on this GPU measured its own yet: this host's, an upper bound where it is slower)"
               if "this host's" in whose else "")
            + "; one not played (what only the GPU says): its estimate ("
            + ("measured by gpu-check" if played.measured else "gpu-check's table: not measured yet")
            + "); share s: its share of budget_s, past which it is stopped; here s: what it took on this host\n"
            f"device file: {dev.get('source', '?')}")


def show(played: Played, memory: list[Check], dev: JsonObject, out: Console) -> None:
    t = Table(title=f"rehearsal of make gpu-check at {dev['gpu']} speed: NOT A MEASUREMENT (stand-ins at its "
              "figures; nothing recorded)", title_justify="left", caption_justify="left",
              caption=clock_caption(played, dev))
    for col in ("check", "result", "figure", "device s", "share s", "here s"):
        t.add_column(col, overflow="fold")
    over = {c.split()[0] for c in over_share(played)}
    for r in played.rows:
        color = "red" if r.check in missed(played) else ("yellow" if not rehearsed(r) else "green")
        charged = played.charged.get(r.check)
        device = "-" if charged is None else f"{charged:.0f}" + (
            f" ({played.work[r.check]:.0f} work)" if played.harness_of.get(r.check) != "estimated" else "")
        device = f"[red]{device}[/red]" if r.check in over else device
        t.add_row(f"{r.check} {r.title}", f"[{color}]{r.result}[/{color}]", r.figure, device,
                  f"{played.shares.get(r.check, 0):.0f}", f"{played.seconds.get(r.check, 0):.0f}")
    out.print(t)
    m = Table(title="memory within cap: mnist-torch with all 60,000 images", title_justify="left",
              caption="the CUDA context + the tensors counted on this host; room: the context + "
              f"{1 - UNSEEN_SHARE:.0%} of the rest of the cap (cuDNN's workspaces and the allocator's blocks are not "
              "counted)",
              caption_justify="left")
    for col in ("check", "figure", "target", "result"):
        m.add_column(col, overflow="fold")
    for c in memory:
        m.add_row(c.name, c.figure, c.target, "ok" if c.ok else "[red]MISSED[/red]")
    out.print(m)


def main(argv: list[str] | None = None) -> int:
    args, rest = arguments(argv)
    why = refusal(args, rest)
    if why:
        print(f"error: {why}", file=sys.stderr)
        return 2
    register_configs()
    try:
        dev = device_file.load(args.gpu)
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    out = Console(width=tables.console_width())
    for note in StandIn(dev).notes():
        out.print(f"rehearse: {note}", highlight=False)
    memory = data_checks(dev, mnist_torch_peak_MiB(framebuffer_MiB=1024))
    stop_on_signals()
    try:
        with tempfile.TemporaryDirectory(prefix="rehearsal-") as tmp:
            played = play(dev, Path(tmp), [c for c in args.only.split(",") if c], args.budget_s, out)
        played = removed(played, Path(tmp))
    except KeyboardInterrupt:  # its runs were in a temporary store, removed: nothing of it is left or recorded
        print("rehearse: interrupted; nothing was recorded (its runs' temporary store is removed)", file=sys.stderr)
        return 130
    show(played, memory, dev, out)
    misses = [f"{c} (its judge)" for c in missed(played)] + [c.name for c in memory if not c.ok]
    over = overrun(played)
    total = sum(played.charged.values())
    verdict = "; ".join([*([f"stopped: {played.stopped}: no verdict on the checks it did not finish"]
                           if played.stopped else []),
                         *([over] if over else []), *([f"missed: {', '.join(misses)}"] if misses else [])])
    out.print(f"rehearse: make gpu-check at {dev['gpu']} speed: " + (verdict or (
        f"every check's judge holds and it would end in {played.device_s:.0f} s of budget_s={args.budget_s:g} (the "
        f"checks {total:.0f} s, the executor's exports and the conclusion the rest)")), highlight=False)
    return 130 if played.stopped else 1 if verdict else 0


if __name__ == "__main__":
    raise SystemExit(main())
