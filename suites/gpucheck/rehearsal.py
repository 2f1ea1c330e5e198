"""``make rehearse``'s judgement: gpu-check's own campaign played at a device file's speeds
(:mod:`suites.gpucheck.played`) through the campaign executor, judged as the device call would be (a check that
fails, or one that would not start within ``budget_s`` on the device's clock: "would overrun"), beside what only a
count can rehearse: whether an mnist-torch guest with all 60,000 images fits each profile's framebuffer with the
device's CUDA context. Nothing it finds is a measurement."""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

from rich.console import Console

from gpu_probe import inventory
from gpu_probe.shapes import JsonObject
from suites.campaign import execute
from suites.gpucheck import campaign, judges
from suites.gpucheck.campaign import GpuCheck
from suites.gpucheck.checks import Context, Row
from suites.gpucheck.conclude import concluder, rows_of
from suites.gpucheck.played import NOT_REHEARSED, StandIn
from suites.gpucheck.report import write_summary
from suites.pipeline.orchestrate import say
from suites.workloads.device_bytes import UNSEEN_SHARE

__all__ = ["PROFILES", "REMOVED", "Check", "Played", "data_checks", "judge_memory", "overrun", "play", "removed"]

# Profiles gpu-check and the study put an mnist-torch guest in: (name, framebuffer MiB; None: the whole card)
PROFILES = (("m60-8q", 8192), ("m60-4q", 4096), ("m60-2q", 2048), ("m60-1q", 1024), ("passthrough-1gpu", None))
NOT_STARTED = "skipped: not started"


@dataclass
class Check:
    name: str
    figure: str
    target: str
    ok: bool


def judge_memory(profile: str, context_MiB: float, tensors_MiB: float, cap_MiB: float) -> Check:
    """A guest's context and counted tensors against its cap less the part of its share a count does not see
    (cuDNN's workspaces, the allocator's blocks: :data:`suites.workloads.device_bytes.UNSEEN_SHARE`)."""
    room = context_MiB + (cap_MiB - context_MiB) * (1 - UNSEEN_SHARE)
    need = context_MiB + tensors_MiB
    return Check(f"memory within cap: {profile}", f"{need:,.0f} = {context_MiB:,.0f} + {tensors_MiB:,.0f} MiB",
                 f"<= {room:,.0f} MiB (cap {cap_MiB:,.0f})", need <= room)


def data_checks(dev: JsonObject, tensors_MiB: float) -> list[Check]:
    """mnist-torch with all 60,000 images in each profile the study and gpu-check give it: the device file's CUDA
    context and ``tensors_MiB`` (:func:`suites.workloads.device_bytes.mnist_torch_peak_MiB`)."""
    context = float(dev["cuda_context_MiB"])
    return [judge_memory(name, context, tensors_MiB, float(fb if fb is not None else dev["mem_total_MiB"]))
            for name, fb in PROFILES]


@dataclass
class Played:
    """gpu-check's campaign as the rehearsal played it."""

    rows: list[Row]
    seconds: dict[str, float]  # what each check took here
    estimates: dict[str, float]  # what each takes on the device
    measured: bool  # the estimates are the device file's measured check_s
    stopped: str  # why it stopped early ('' where it did not)
    budget_s: float
    device_s: float = 0.0  # how long the device call would take: each check its charge, the executor's own work
    charged: dict[str, float] = field(default_factory=dict)  # each check's seconds on the device's clock
    harness_of: dict[str, str] = field(default_factory=dict)  # whose harness cost each charge holds
    shares: dict[str, float] = field(default_factory=dict)  # each check's share of the budget
    work: dict[str, float] = field(default_factory=dict)  # each check's timed windows (at the device file's speeds)


def play(dev: JsonObject, folder: Path, only: list[str], budget_s: float, out: Console) -> Played:
    """gpu-check's campaign at ``dev``'s speeds, in ``folder`` (its store, runs and summary), on the device's
    clock."""
    stand_in = StandIn(dev)
    t0 = time.monotonic()
    ctx = Context(folder / "gpu-check", stand_in.inventory(inventory.collect()), None, t0 + budget_s, say(out),
                  stand_in=stand_in)
    estimates, measured = campaign.estimates_for(dev)  # the file already loaded, not read again
    gc = GpuCheck(ctx, only, estimates, measured)
    gc.ended_at = t0  # the executor's start (its run, its store) counts as its seconds between checks, at the device's
    ctx.timings_file = lambda: write_summary(gc, list(gc.rows.values()), time.monotonic() - t0)[0]
    run = execute(campaign.campaign_of(gc, t0, budget_s), concluder(gc, t0), out)
    return Played(rows_of(gc, run), gc.seconds, {c: estimates[c] for c in gc.chosen}, measured,
                  run.stopped, budget_s, time.monotonic() - t0 - gc.moved_s, gc.charged, gc.harness_of, gc.shares,
                  {c: clock.work_s for c, clock in gc.clocks.items()})


REMOVED = "<the rehearsal's folder, removed>"


def removed(played: Played, folder: Path) -> Played:
    """``played`` once its ``folder`` is gone: a row's figure or result that names a path in it (h's report.html,
    its sync command) names the folder as removed and the file by its name ('<...removed>/.../report.html'), never
    a path that is not there."""
    path = re.compile(re.escape(str(folder)) + r"(?![^/\s`;])(/[^\s`;]*)?")  # the folder, not a longer name

    def short(m: re.Match[str]) -> str:
        parts = (m[1] or "").strip("/").split("/")
        return REMOVED + (f"/…/{parts[-1]}" if len(parts) > 1 else f"/{parts[0]}" if parts[0] else "")

    return replace(played, rows=[replace(r, result=path.sub(short, r.result), figure=path.sub(short, r.figure))
                                 for r in played.rows])


SHARE_SLACK_S = 1.0  # a charge this much past its share is the clocks' rounding, not an overrun


def over_share(played: Played) -> list[str]:
    """The checks whose charge on the device's clock passed their share of the budget, each with both figures."""
    return [f"{c} {s:.0f} s of {played.shares[c]:.0f} s" for c, s in played.charged.items()
            if c in played.shares and s > played.shares[c] + SHARE_SLACK_S]


def overrun(played: Played) -> str:
    """'' where the device call would end within its budget and each check within its share, else why it would
    not: the call's seconds on the device's clock (each check its charge, the executor's own work), the checks past
    their share, those the device would not start."""
    late = [r.check for r in played.rows if r.result.startswith(NOT_STARTED)]
    over = over_share(played)
    if not late and not over and played.device_s <= played.budget_s:
        return ""
    return (f"would overrun: the call {played.device_s:.0f} s on the device's clock, its checks "
            f"{sum(played.charged.values()):.0f} s of it (budget_s={played.budget_s:g}; the checks' estimates "
            f"{sum(played.estimates.values()):.0f} s)"
            + (f"; past their share of it: {', '.join(over)}" if over else "")
            + (f"; not started on the device's clock: {', '.join(late)}" if late else ""))


def missed(played: Played) -> list[str]:
    """The checks whose judge missed (a failure or an inconclusive row): what the device call would fail on."""
    return [r.check for r in played.rows if r.result.startswith((judges.FAILED, judges.INCONCLUSIVE))]


def rehearsed(row: Row) -> bool:
    return not row.result.startswith(NOT_REHEARSED)
