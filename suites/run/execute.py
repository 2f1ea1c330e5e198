"""Run one planned scenario: start guests, release them together at the barrier, sample, collect.

Nothing measured is lost: a failed or killed guest becomes a recorded failure,
and Ctrl-C stops the guests and still returns what was measured. The outcome
is plain data; the caller writes, prints and records it.
"""

from __future__ import annotations

import time
from pathlib import Path

from gpu_probe.sampler import Sampler
from suites.backends.base import Timing
from suites.backends.handle import GuestHandle
from suites.run.outcome import GuestOutcome, ScenarioOutcome, measured_validity
from suites.run.plan import Plan
from suites.run.progress import ProgressView


def execute(plan: Plan, log_dir: Path) -> ScenarioOutcome:
    """The whole scenario; each guest's log goes to ``log_dir/<guest>.log``."""
    log_dir.mkdir(parents=True, exist_ok=True)
    sampler = Sampler(plan.cfg.sampler.rate_hz)
    timing = Timing(t_start=time.time())
    with sampler:
        guests, interrupted = run_guests(plan, sampler, log_dir, timing)
    return outcome_of(plan, guests, sampler, timing, interrupted)


def run_guests(plan: Plan, sampler: Sampler, log_dir: Path, timing: Timing) -> tuple[list[GuestHandle], bool]:
    """Start all guests, release them together, supervise; (guests, interrupted)."""
    cfg, backend = plan.cfg, plan.backend
    guests: list[GuestHandle] = []
    interrupted = False
    try:
        with ProgressView(cfg.progress.value) as view:
            backend.start(plan.specs, plan.placements, log_dir, guests)
            for g in guests:
                g.watch(sampler)
            backend.supervise(guests, view.update, cfg.scenario.start_timeout_s, cfg.scenario.timeout_s, timing)
    except KeyboardInterrupt:
        interrupted = True
        for g in guests:
            if not g.finished:
                g.pump()  # keep a result that arrived just before Ctrl-C
                g.kill("interrupted (Ctrl-C)")
    finally:
        for s in plan.specs[len(guests):]:  # interrupted before these existed: still one recorded failure each
            guests.append(GuestHandle(s, log_dir / f"{s.guest_id}.log"))
            guests[-1].fail("interrupted before it started")
        for g in guests:
            g.terminate()  # idempotent: no guest outlives the runner
        backend.shutdown()
    return guests, interrupted


def outcome_of(plan: Plan, guests: list[GuestHandle], sampler: Sampler, timing: Timing,
               interrupted: bool) -> ScenarioOutcome:
    samples = sampler.snapshot()
    outcomes = []
    for g, p in zip(guests, plan.placements, strict=True):
        result = g.final_result()
        outcomes.append(GuestOutcome(g.spec, p, result, g.log_path, samples.aggregate(f"{g.id}."),
                                     measured_validity(p, result)))
    failed = [o for o in outcomes if not o.result.ok]
    reasons = [f"{o.spec.guest_id}: {o.result.error}" for o in failed]
    if interrupted:
        status = "interrupted"
    elif not failed:
        status = "ok"
    else:
        status = "failed" if len(failed) == len(outcomes) else "partial"
    ends = [o.result.t_train_end for o in outcomes if o.result.ok and o.result.t_train_end]
    t_release, t_end = timing.t_release, timing.t_end
    makespan = (max(ends) - t_release) if ends and t_release else None
    if status == "ok" and t_end and t_release:
        makespan = t_end - t_release
    return ScenarioOutcome(status, outcomes, makespan, reasons, plan.inventory, plan.data, samples,
                           samples.host_metrics(), started_at=timing.t_start or 0.0, ended_at=time.time())
