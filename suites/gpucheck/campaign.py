"""``make gpu-check`` as a campaign: its checks in priority order, each a part of the one campaign executor's with its
estimate, under one deadline (``budget_s`` from the command's start: a check that cannot end by it does not start,
said), its runs nested under one gpu-check run and exported after each check, an interrupt ending it KILLED with
nothing left RUNNING; concluded with one summary (json, md), the device file of what it measured, and each check's
result on the gpu-check run.

The estimates are the seconds each check took on a lent GPU (the device file's ``check_s``, written by the last
gpu-check on that GPU) where they were measured, else :data:`ESTIMATE_S` (an estimate, said so)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from gpu_probe.shapes import JsonObject
from suites import store_keys as keys
from suites.campaign import Campaign, CampaignPart, CampaignRun
from suites.config.compose import compose_run
from suites.gpucheck import checks, judges, suite_checks
from suites.gpucheck.checks import Context, Row
from suites.gpucheck.played import NOT_PLAYED, NOT_REHEARSED
from suites.record.export import adopt_roots

__all__ = ["BUDGET_S", "ESTIMATE_S", "PRIORITY", "GpuCheck", "campaign_of", "estimates_for"]

assert suite_checks  # its checks register themselves on import: c3, i, j, k, l

BUDGET_S = 540.0  # the whole command: 9 minutes, within a lent GPU's 10-minute call with its set-up and tarball
# The order checks run in: what matters most first, so a budget that runs out cuts the least (each cut said).
PRIORITY = ("a", "b1", "c1", "c2", "c3", "d", "e", "b3", "b2", "g", "i", "j", "l", "k", "h", "f")
# Seconds a check takes on one H200 where no gpu-check measured it yet (the sixth run's logs where it had the
# check: b1-b3, c1, c2, e; the others estimated from a bench run's ~8 s of set-up there). Said as estimates.
# a-e and b1-b3 took 178 s together there; a phase run of a comparison (guests started, sampled, recorded) ~5 s, so
# i (2 phases x 2 repeats) ~30, j (3 x 2) ~35, k (2 candidates x 2 policies x 3 phases x 2 repeats) ~120; f with a
# pycuda built before the call ~10. They sum to 499 s of the 540: the rest is the executor's (an export after each
# check) and the conclusion's.
ESTIMATE_S = {"a": 1, "b1": 20, "b2": 35, "b3": 50, "c1": 25, "c2": 15, "c3": 40, "d": 0, "e": 15, "f": 10,
              "g": 45, "h": 50, "i": 30, "j": 35, "k": 120, "l": 8}


@dataclass
class GpuCheck:
    """One gpu-check as it runs: its context, the checks it runs (``only=`` or every one) and their rows."""

    ctx: Context
    only: list[str]
    estimates: dict[str, float]
    measured: bool  # the estimates are the device file's measured check seconds (else ESTIMATE_S)
    rows: dict[str, Row] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)
    moved_s: float = 0.0  # a rehearsal: seconds the device's clock is behind this host's (estimates - seconds here)
    ended_at: float | None = None  # a rehearsal: when the last check ended (the executor's seconds since are its own)

    @property
    def chosen(self) -> list[str]:
        return [c for c in PRIORITY if not self.only or c in self.only]


# Of each estimate, the seconds the GPU works (training steps, replays, kernels): what a slower or faster GPU changes.
# The rest is set-up the host does (processes, imports, CUDA's start, compiling, recording).
WORK_S = {"a": 0, "b1": 3, "b2": 10, "b3": 10, "c1": 5, "c2": 2, "c3": 4, "d": 0, "e": 2, "f": 5, "g": 20, "h": 15,
          "i": 5, "j": 20, "k": 50, "l": 0}
REFERENCE = ("mnist-torch/512/eager", 4.414)  # the H200's step the table's seconds were taken at (configs/device)


def estimates_for(dev: JsonObject | None) -> tuple[dict[str, float], bool]:
    """Each check's seconds on the GPU of the device file ``dev`` (None: no file of this GPU): its measured
    ``check_s`` where it has them all, else the table with its GPU work scaled by how much slower that GPU's MNIST
    step is than the H200's (a GPU with steps 3x as long works 3x as long); and whether they were measured."""
    dev = dev or {}
    measured = dev.get("check_s", {})
    if measured and all(c in measured for c in PRIORITY):
        return {c: float(measured[c]) for c in PRIORITY}, True
    step = dev.get("step_ms", {}).get(REFERENCE[0])
    slower = float(step) / REFERENCE[1] if step else 1.0
    return {c: round(float(s) + WORK_S[c] * (slower - 1), 1) for c, s in ESTIMATE_S.items()}, False


def action(gc: GpuCheck, check: str) -> Callable[[CampaignRun], int]:
    """What runs ``check``: its row kept, the runs it recorded nested under the gpu-check run (tagged with it);
    its exit status (1 where it failed)."""
    def run(campaign: CampaignRun) -> int:
        t0 = time.monotonic()
        if gc.ctx.stand_in is not None and gc.ended_at is not None:  # the executor's seconds at the device's rate
            move(gc, campaign, t0 - gc.ended_at - EXECUTOR_S)
        gc.ctx.deadline = campaign.campaign.deadline  # the executor's: the one clock a check's commands are timed by
        try:
            if gc.ctx.stand_in is not None and check in NOT_PLAYED:
                row = Row(check, f"{NOT_REHEARSED}: {NOT_PLAYED[check]}")
            else:
                row = checks.run_check(gc.ctx, check, lambda: checks.CHECKS[check].run(gc.ctx))
        finally:
            gc.seconds[check] = round(time.monotonic() - t0, 1)
            parent = campaign.nest.parent
            adopt(gc, check, parent.run_id if parent is not None else None)
        if gc.ctx.stand_in is not None:  # a rehearsal: the device's clock, on which this check took its estimate
            move(gc, campaign, gc.seconds[check] - gc.estimates[check])
            gc.ended_at = time.monotonic()
        gc.rows[check] = row
        return 1 if row.result.startswith(judges.FAILED) else 0
    return run


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
    return Campaign(keys.GPU_CHECK, "gpu-check", root.parent, parts, keys.CHECK_PART, noun="check",
                    deadline=started + budget_s, export=True, run_dir=root)
