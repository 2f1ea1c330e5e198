"""``make gpu-check`` as a campaign: its checks in priority order, each a part of the one campaign executor's with its
estimate, under one deadline (``budget_s`` from the command's start: a check that cannot end by it does not start,
said), its runs nested under one gpu-check run and exported after each check, an interrupt ending it KILLED with
nothing left RUNNING; concluded with one summary (json, md), the device file of what it measured, and each check's
result on the gpu-check run.

The estimates are the seconds each check took on a lent GPU (the device file's ``check_s``, written by the last
gpu-check on that GPU) where they were measured, else :data:`ESTIMATE_S` with its GPU work at that GPU's pace (an
estimate, said so). Each check runs within its share: what is left less the estimates of the checks after it."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from gpu_probe.shapes import JsonObject
from suites import store_keys as keys
from suites.campaign import Campaign, CampaignPart, CampaignRun
from suites.config import device_file, stand_in
from suites.config.compose import compose_run
from suites.errors import ConfigError
from suites.gpucheck import checks, device_clock, judges, suite_checks
from suites.gpucheck.checks import Context, Row
from suites.gpucheck.device_clock import CheckClock
from suites.gpucheck.played import NOT_PLAYED, NOT_REHEARSED
from suites.gpucheck.settings import BUDGET_S, PRIORITY  # what budget_s= and only= are read against
from suites.record.export import adopt_roots
from suites.run_kinds import RunKind

__all__ = ["BUDGET_S", "ESTIMATE_S", "PRIORITY", "GpuCheck", "campaign_of", "estimates_for"]

assert suite_checks  # its checks register themselves on import: c3, i, j, k, l

# Seconds a check takes on one H200 where no gpu-check measured it yet, said as estimates: b1-b3, c1, c2 and e from
# the sixth run's logs there (before the harness cost 0.1-0.4 s a repeat instead of ~3 s); c3, i, j, l and k from
# make rehearse GPU=h200 on a 2-core host with this host's harness (an upper bound: a GPU host starts processes and
# imports faster), with a margin; g and f from a bench run's ~8 s of set-up there; h what is left of the 540 s after
# the others and the executor's ~20 s (an export after each check, the conclusion): the study plans within it.
ESTIMATE_S = {"a": 1, "b1": 20, "b2": 35, "b3": 50, "c1": 25, "c2": 15, "c3": 40, "d": 0, "e": 15, "f": 10,
              "g": 45, "h": 100, "i": 40, "j": 35, "k": 80, "l": 8}


@dataclass
class GpuCheck:
    """One gpu-check as it runs: its context, the checks it runs (``only=`` or every one) and their rows."""

    ctx: Context
    only: list[str]
    estimates: dict[str, float]
    measured: bool  # the estimates are the device file's measured check seconds (else ESTIMATE_S)
    rows: dict[str, Row] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)
    moved_s: float = 0.0  # a rehearsal: seconds the device's clock is behind this host's (charges - seconds here)
    ended_at: float | None = None  # a rehearsal: when the last check ended (the executor's seconds since are its own)
    clocks: dict[str, CheckClock] = field(default_factory=dict)  # each check's wall, work and harness here
    charged: dict[str, float] = field(default_factory=dict)  # a rehearsal: each check's seconds on the device's clock
    harness_of: dict[str, str] = field(default_factory=dict)  # a rehearsal: whose harness cost each charge holds
    shares: dict[str, float] = field(default_factory=dict)  # each check's share of the budget, as it started

    @property
    def chosen(self) -> list[str]:
        return [c for c in PRIORITY if not self.only or c in self.only]


# Of each estimate, the seconds the GPU works at the H200's speeds, by what sets their pace: mnist-torch's step
# ("mnist"; a comparison's CPU arm is played at 10x it), cifar10-torch's step ("cifar"), a CAD frame ("frame"), or
# kernels no device file times ("kernels"): what a slower or faster GPU changes. The rest is the harness's: processes,
# imports, CUDA's start, compiling, recording (on the H200's host, or this one's where the table says so).
WORK_S: dict[str, dict[str, float]] = {  # c3, i, j, k, h: the timed windows make rehearse GPU=h200 played (k's and
    # j's split between MNIST and the CAD frames evenly: not timed apart); the others from the sixth run's logs
    "a": {}, "b1": {"mnist": 2}, "b2": {"cifar": 10}, "b3": {"cifar": 10}, "c1": {"mnist": 5}, "c2": {"mnist": 2},
    "c3": {"mnist": 2}, "d": {}, "e": {"frame": 2}, "f": {"kernels": 5}, "g": {"kernels": 20},
    "h": {"mnist": 6, "frame": 6}, "i": {"mnist": 16}, "j": {"mnist": 7, "frame": 7},
    "k": {"mnist": 27, "frame": 27}, "l": {}}
# The H200's figures the table's seconds were taken at (configs/device/h200.json as it was then: a file a person
# replaces later must not move the table): each pace's step as (workload, batch, how it ran, ms), and its frames
REFERENCE = {"mnist": ("mnist-torch", 512, device_file.EAGER, 4.414),
             "cifar": ("cifar10-torch", 1024, "compile=reduce-overhead", 3.866)}
REFERENCE_FRAME_MS = {"mechanical": 1.958, "architecture": 0.647, "product": 0.368}


def paces(dev: JsonObject) -> dict[str, float]:
    """How many times as long as the H200's each pace of work is on the device file ``dev``'s GPU (1: as fast, or
    not in the file): its MNIST and CIFAR-10 steps as a stand-in plays them (another batch at equal throughput, the
    other way of running it where this one was not measured), its frames (the mean over the viewsets both time)."""
    out = {}
    for pace, (workload, batch, how, ms) in REFERENCE.items():
        try:
            out[pace] = stand_in.step_of(dev, workload, batch, how) / ms if dev.get("step_ms") else 1.0
        except ConfigError:  # the file times no step of this workload
            out[pace] = 1.0
    frames = [float(ms) / REFERENCE_FRAME_MS[v] for v, ms in dev.get("frame_ms", {}).items() if v in REFERENCE_FRAME_MS]
    return {**out, "frame": sum(frames) / len(frames) if frames else 1.0, "kernels": 1.0}


def estimates_for(dev: JsonObject | None) -> tuple[dict[str, float], bool]:
    """Each check's seconds on the GPU of the device file ``dev`` (None: no file of this GPU): its measured
    ``check_s`` where it has one, else the table with its GPU work at that GPU's pace (a GPU with MNIST steps 3x as
    long works 3x as long at MNIST, one with frames 3x as long 3x as long at its replays); and whether all of them
    were measured."""
    dev = dev or {}
    measured, pace = dev.get("check_s", {}), paces(dev)
    table = {c: round(float(ESTIMATE_S[c]) + sum(s * (pace[p] - 1) for p, s in WORK_S[c].items()), 1)
             for c in PRIORITY}
    return {c: float(measured.get(c, table[c])) for c in PRIORITY}, all(c in measured for c in PRIORITY)


def action(gc: GpuCheck, check: str) -> Callable[[CampaignRun], int]:
    """What runs ``check``: its row kept, the runs it recorded nested under the gpu-check run (tagged with it);
    its exit status (1 where it failed)."""
    def run(campaign: CampaignRun) -> int:
        t0, began, before = time.monotonic(), time.time(), device_clock.results_under(gc.ctx.root)
        if gc.ctx.stand_in is not None and gc.ended_at is not None:  # the executor's seconds at the device's rate
            move(gc, campaign, t0 - gc.ended_at - EXECUTOR_S)
        # its share: the executor's deadline (the one clock a check's commands are timed by) less what the checks
        # after it are estimated to need; a check that runs long stops there, so none starves the ones after it. A
        # rehearsal's check plans by it but is judged against it on the device's clock once it ended (this host's
        # harness is not the device's): its commands run to the executor's deadline
        end = device_clock.share_end(campaign.campaign.deadline, t0, check, gc.chosen, gc.estimates)
        gc.ctx.share_end, gc.shares[check] = end, round(end - t0, 1)
        gc.ctx.deadline = campaign.campaign.deadline if gc.ctx.stand_in is not None else end
        try:
            if gc.ctx.stand_in is not None and check in NOT_PLAYED:
                row = Row(check, f"{NOT_REHEARSED}: {NOT_PLAYED[check]}")
            else:
                row = checks.run_check(gc.ctx, check, lambda: checks.CHECKS[check].run(gc.ctx))
        finally:
            gc.seconds[check] = round(time.monotonic() - t0, 1)
            gc.clocks[check] = device_clock.clock_of(gc.ctx.root, before, began, gc.seconds[check])
            parent = campaign.nest.parent
            adopt(gc, check, parent.run_id if parent is not None else None)
        if gc.ctx.stand_in is not None:  # a rehearsal: the device's clock, on which this check took its charge
            charged(gc, check)
            move(gc, campaign, gc.seconds[check] - gc.charged[check])
            gc.ended_at = time.monotonic()
        else:
            replan(gc, campaign)
        gc.rows[check] = row
        return 1 if row.result.startswith(judges.FAILED) else 0
    return run


def replan(gc: GpuCheck, campaign: CampaignRun) -> None:
    """A GPU whose device file holds no measured check seconds (an H100 has no file at all): the checks not yet run
    planned anew at the pace its own first checks measured (b1's MNIST step, b3's CIFAR-10 step, e's frames), said
    where that moved their estimates."""
    if gc.measured:
        return
    dev = device_file.measured(gc.ctx.inv, gc.ctx.results, gc.ctx.timings)
    if dev is None or not (dev["step_ms"] or dev["frame_ms"]):  # no pace measured yet: the plan stands
        return
    fresh, _ = estimates_for({"step_ms": dev["step_ms"], "frame_ms": dev["frame_ms"]})
    left = [p for p in campaign.campaign.parts if p.name not in gc.seconds and p.name in fresh]
    moved = {p.name: fresh[p.name] for p in left if abs(fresh[p.name] - p.estimate_s) >= 1.0}
    for p in left:
        p.estimate_s = gc.estimates[p.name] = fresh[p.name]
    if moved:
        pace = ", ".join(f"{k} {v:.2f}x" for k, v in paces(dev).items() if k != "kernels")
        gc.ctx.say(f"gpu-check: the checks left planned anew at this GPU's measured pace (the H200's = 1: {pace}): "
                   + ", ".join(f"{c} {s:.0f} s" for c, s in moved.items()))


def charged(gc: GpuCheck, check: str) -> None:
    """A rehearsed check's seconds on the device's clock: its work here at the device file's speeds plus the
    harness cost the device measured for it, else this host's (device_clock.charge); a check it cannot play, its
    estimate."""
    assert gc.ctx.stand_in is not None
    if check in NOT_PLAYED:
        gc.charged[check], gc.harness_of[check] = gc.estimates[check], "estimated"
        return
    measured = gc.ctx.stand_in.dev.get("harness_s", {}).get(check)
    gc.charged[check], gc.harness_of[check] = device_clock.charge(gc.clocks[check], measured)


# A rehearsal's executor between two checks (gpu-check's export after each) on the device's clock: ~0.6 s on this
# 2-core host when it is quiet; what a loaded host adds is that host's, not the device's (a CI worker beside the
# rehearsal made h "out of time" on the device's clock though the device would have reached it)
EXECUTOR_S = 0.75


def move(gc: GpuCheck, campaign: CampaignRun, seconds: float) -> None:
    """Put the device's clock ``seconds`` behind this host's (a check's seconds here past its estimate): the
    executor's deadline, which the next check reads."""
    campaign.campaign.deadline += seconds
    gc.moved_s += seconds


def adopt(gc: GpuCheck, check: str, parent_id: str | None) -> None:
    if parent_id is not None and (gc.ctx.root / "mlflow.db").exists():
        adopt_roots(f"sqlite:///{gc.ctx.root / 'mlflow.db'}", parent_id, {keys.CHECK_PART: check})


def campaign_of(gc: GpuCheck, started: float, budget_s: float) -> Campaign:
    """The checks as parts, in priority order, each with its estimate, under the deadline ``budget_s`` after
    ``started``; recorded into the store of gpu-check's own folder."""
    root = gc.ctx.root
    comp = compose_run(["scenario=single", "workload=fixed-step", f"tracking_uri=sqlite:///{root / 'mlflow.db'}",
                        f"artifact_dir={root / 'mlartifacts'}"])  # names the store; never run
    parts = [CampaignPart(c, comp, {}, gc.estimates[c], f"{c} {checks.CHECKS[c].title}", action=action(gc, c))
             for c in gc.chosen]
    return Campaign(RunKind.GPU_CHECK, "gpu-check", root.parent, parts, keys.CHECK_PART, noun="check",
                    deadline=started + budget_s, export=True, run_dir=root)
