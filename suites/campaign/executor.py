"""The one executor of a campaign: it waits for and leases cores, opens the parent run, runs the parts nested under
it (each reused from the store where its plan says so, placed and leased, timed), stops cleanly at an interrupt or
the deadline, lets the command conclude (read back, report, record), ends the parent run, and exports the run tree.

A part that does not fit this host is skipped with why; an interrupt during a part ends the campaign there (the
parts left are listed, not run) and the command still concludes from what finished, under a :class:`Shield`; an
interrupt or a fault anywhere else ends the parent run KILLED or FAILED with its reason, and a run an interrupt left
RUNNING under it ends KILLED: never FINISHED, so never reused."""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console

from gpu_probe.procfs import started_at
from suites import store_keys as keys
from suites.backends.corelock import CoreLease, CoresHeld, describe, held_by_others
from suites.campaign.spec import (
    MEASURED,
    NOT_RUN,
    REUSED,
    SKIPPED,
    Campaign,
    CampaignPart,
    CampaignRun,
    PartRun,
    overran,
)
from suites.config.schema import one_line, run_stamp
from suites.errors import BenchError, PlacementError, fail
from suites.pipeline.orchestrate import Nest, PlannedComparison, best_effort, plan_comparison, run_comparison, say
from suites.record import mlflow_runs
from suites.record.export import export_tree
from suites.record.recorder import Recorder
from suites.run import harness
from suites.run.outcome import EXIT_INTERRUPTED
from suites.run.plan import plan_and_lease
from suites.run.shield import Shield, honour, interrupt_reason, noted

__all__ = ["Conclusion", "execute"]


@dataclass
class Conclusion:
    """What a command made of its campaign's parts: the report's files, and the parent run's end ('' : FINISHED,
    KILLED where it was stopped, FAILED where a part failed)."""

    files: list[Path] = field(default_factory=list)
    status: str = ""


Conclude = Callable[[CampaignRun], Conclusion]
Placed = dict[str, PlannedComparison]  # part name -> its comparison placed (a whole-host campaign's, up front)


def execute(campaign: Campaign, conclude: Conclude, out: Console) -> CampaignRun:
    """The campaign run, from its lease to its export; what it stopped at is ``.stopped``, its exit status ``.code``.
    A campaign nothing of which can run here is one ``error:`` line, before anything is written. The command has
    installed its signal handlers (stop_on_signals): an interrupt is a KeyboardInterrupt here."""
    placed, skipped, lease = lease_whole_host(campaign, out) if campaign.whole_host else ({}, [], None)
    run_dir = campaign.run_dir or campaign.out_dir / run_stamp()  # time, milliseconds and pid: never another's
    run_dir.mkdir(parents=True, exist_ok=campaign.run_dir is not None)
    try:  # seconds of store set-up (MLflow's import, the store's first touch): an interrupt here measured nothing
        recorder = Recorder(campaign.parts[0].comp.cfg, say(out))
        parent = recorder.start_parent(f"{campaign.kind}-{run_dir.name}", {
            keys.ROLE: campaign.kind, keys.KIND: campaign.kind, keys.RUN_DIR: str(run_dir.resolve())})
    except KeyboardInterrupt as exc:
        with contextlib.suppress(OSError):
            run_dir.rmdir()  # its own new folder, still empty (a started parent run is ended by the next command)
        say(out)(f"{campaign.said}: {interrupt_reason(exc)} before its first {campaign.noun} started: nothing "
                 "measured")
        raise
    run = CampaignRun(campaign, run_dir, Nest(recorder, parent, launcher=campaign.said), list(skipped))
    try:
        with lease or contextlib.nullcontext():  # a whole-host lease is held from planning to the last part's end
            run_parts(run, placed, out)
        harness_said(run, out)
        with Shield(say(out), f"concluding the {campaign.kind}") if run.stopped else contextlib.nullcontext():
            done = conclude(run)
            end(run, done.status or status_of(run), run.stopped, done.files)
            run.concluded = True
        if honour() is not None and not run.stopped:  # held off while it concluded: concluded, then ended KILLED
            run.stopped = f"{interrupt_reason()} while the {campaign.kind} concluded"
            end(run, "KILLED", run.stopped)
    except KeyboardInterrupt as exc:  # between parts, or while concluding: said, recorded, nothing is an answer
        with Shield(say(out), f"recording the {campaign.kind}'s end"):
            end(run, "KILLED", interrupt_reason(exc))
        honour()  # this end is the interrupt's: a press during it is not owed again
        say(out)(f"{campaign.said}: {interrupt_reason(exc)}: the {campaign.kind} run is recorded KILLED; its "
                 f"{campaign.noun}s so far are in the store (an unfinished one FAILED: never reused); {run_dir}")
        run.stopped = run.stopped or interrupt_reason(exc)
        return run
    except BaseException as exc:  # a fault: the run is FAILED with its reason, then the traceback as ever
        end(run, "FAILED", f"{type(exc).__name__}: {one_line(exc)}")
        raise
    export(run, out, final=True)
    return run


def harness_said(run: CampaignRun, out: Console) -> None:
    """The campaign's measured share and cost per repeat, from its measured parts' harness.json (each part's
    comparison writes one), said and recorded on the campaign's run."""
    docs = []
    for path in sorted(run.run_dir.rglob("harness.json")):  # every comparison its parts ran, however deep
        with contextlib.suppress(OSError, ValueError):
            docs.append(json.loads(path.read_text()))
    cost = harness.of_parts(docs, started_at(), time.time())
    for line in harness.lines(cost, f"this {run.campaign.kind}"):
        say(out)(line)
    run.record(mlflow_runs.ParentResults({}, harness.metrics(cost), {}))


def status_of(run: CampaignRun) -> str:
    return "KILLED" if run.stopped else ("FINISHED" if run.code == 0 else "FAILED")


def end(run: CampaignRun, status: str, why: str, files: Sequence[Path] = ()) -> None:
    """The parent run ended ``status`` with ``files`` as its artifacts; where it stopped early, with its reason
    (bench.stopped: only here), and a part (or its phase) an interrupt left RUNNING under it ended KILLED."""
    if why:
        run.record(mlflow_runs.ParentResults({}, {}, {keys.STOPPED: why}))
        end_running(run, why)
    run.nest.recorder.finish(run.nest.parent, list(files), status)


def end_running(run: CampaignRun, why: str) -> None:
    """Every run under the parent still RUNNING (an interrupt that escaped a part's own handling left it so) ended
    KILLED with ``why``: never FINISHED, so never reused."""
    parent = run.nest.parent
    if parent is not None:
        try:
            parent.tracker.end_running_under(parent.run_id, why)
        except Exception as exc:  # the store's trouble: said, never the campaign's end
            run.nest.recorder.say(f"warning: runs under the {run.campaign.kind} not ended ({one_line(exc)})")


def export(run: CampaignRun, out: Console, final: bool = False) -> None:
    """The run tree as files in the run directory (``python -m suites sync --run-dir`` imports it elsewhere). After
    a part only what is new is read (an ended run read before is taken from the last export); the final export reads
    the whole tree again, whatever the conclusion added."""
    parent = run.nest.parent
    if run.campaign.export and parent is not None:
        known = None if final else run.exported
        best_effort(out, "run export", lambda: export_tree(parent.tracker.uri, parent.run_id, run.run_dir, known))


def run_parts(run: CampaignRun, placed: Placed, out: Console) -> None:
    """Each part in turn (a whole-host campaign's only those placed up front); stops at an interrupt."""
    campaign, t0 = run.campaign, time.monotonic()
    todo = [p for p in campaign.parts if not campaign.whole_host or p.name in placed]
    for i, part in enumerate(todo, 1):
        late = too_late(campaign, part, time.monotonic())
        if late:
            run.parts.append(PartRun(part.name, SKIPPED, why=late))
            say(out)(f"{campaign.said}: {part.name} {late}")
            continue
        head = f"== {campaign.said} part {i}/{len(todo)}: {part.title or part.name}"
        done = reused(run, part, head, out) or measure(run, part, placed.get(part.name), (head, t0), out)
        run.parts.append(done)
        if done.how == MEASURED:
            export(run, out)  # after each part: a campaign cut off later (a command's time limit) keeps what finished
        if done.code == EXIT_INTERRUPTED or noted() is not None:  # a signal held off (a shield) stops it here too
            run.stopped = f"{done.why or interrupt_reason()} during {part.name}"
            honour()
            run.parts += [PartRun(p.name, NOT_RUN, why=done.why) for p in todo[i:]]
            end_running(run, run.stopped)  # the part (or its phase) an interrupt left RUNNING
            return


def too_late(campaign: Campaign, part: CampaignPart, now: float) -> str:
    """'' where ``part`` can end by the campaign's deadline on its estimate, else why it does not start."""
    left = campaign.deadline - now
    if part.estimate_s <= left:
        return ""
    return (f"not started: its estimate {part.estimate_s:.0f} s is past the {max(left, 0):.0f} s left of "
            f"{campaign.kind}.budget_s (a {campaign.kind} never runs past its budget)")


def reused(run: CampaignRun, part: CampaignPart, head: str, out: Console) -> PartRun | None:
    """The part's stored run where its plan finds one of the same measurement (said), else None."""
    found = part.reuse(run) if part.reuse is not None else None
    if found is None:
        return None
    run_id, doubt = found
    say(out)(f"{head}: reused {run.campaign.noun} run {run_id}"
             + (f" ({doubt})" if doubt else "") + " ==")
    return PartRun(part.name, REUSED, run_id, why=doubt)


def measure(run: CampaignRun, part: CampaignPart, placed: PlannedComparison | None, said: tuple[str, float],
            out: Console) -> PartRun:
    """The part's comparison, nested under the parent run: placed and leased now unless the campaign did it up
    front (a part that does not fit is not run, said); looked for in the store again once it holds its cores (another
    campaign may have measured it while this one waited); timed."""
    campaign, (head, t0) = run.campaign, said
    say(out)(f"{head}: measuring ({time.monotonic() - t0:.0f} s elapsed"
             + (f", {part.estimate_s:.0f} s planned" if part.estimate_s else "") + ") ==")
    if part.action is not None:
        return act(run, part, out)
    lease: contextlib.AbstractContextManager = contextlib.nullcontext()
    if placed is None:
        try:
            placed, lease = plan_and_lease(lambda: plan_comparison(part.comp, out), lambda c: c.plans, run.run_dir,
                                           part.comp.cfg.wait_for_cores_s, say(out))
        except BenchError as exc:  # this part does not fit here: the others still run
            say(out)(f"{campaign.said}: {part.name}: not measured: {one_line(exc)}")
            return PartRun(part.name, NOT_RUN, why=f"not measured: {one_line(exc)}")
    t_part = time.monotonic()
    with lease:
        found = part.reuse(run) if part.reuse is not None else None
        if found is not None:  # two campaigns of the same thing at once: taken, not measured twice
            say(out)(f"{campaign.said}: {part.name}: measured meanwhile by another {campaign.kind}: reused "
                     f"{campaign.noun} run {found[0]}")
            return PartRun(part.name, REUSED, found[0], why=found[1])
        try:
            code, why = run_comparison(placed, run.run_dir / part.folder, out,
                                       run.nest.under(run.nest.parent, {campaign.part_tag: part.name, **part.tags})), ""
        except KeyboardInterrupt as exc:
            code, why = EXIT_INTERRUPTED, interrupt_reason(exc)
    took = said_if_overran(run, part, time.monotonic() - t_part, out)
    return PartRun(part.name, MEASURED, child_of(run, part), took,
                   why or (interrupt_reason() if code == EXIT_INTERRUPTED else ""), code)


def act(run: CampaignRun, part: CampaignPart, out: Console) -> PartRun:
    """A part that runs a command of its own: its exit status, its seconds (said past twice its estimate); an
    interrupt stops the campaign there as a comparison's would."""
    t_part = time.monotonic()
    try:
        code, why = part.action(run), ""  # type: ignore[misc]
    except KeyboardInterrupt as exc:
        code, why = EXIT_INTERRUPTED, interrupt_reason(exc)
    took = said_if_overran(run, part, time.monotonic() - t_part, out)
    return PartRun(part.name, MEASURED, None, took, why, code)


def said_if_overran(run: CampaignRun, part: CampaignPart, took: float, out: Console) -> float:
    """``took``, said where it was more than twice the part's estimate."""
    if overran(part.estimate_s, took):
        say(out)(f"{run.campaign.said}: {part.name} {overran(part.estimate_s, took)} ({took:.0f} s, planned "
                 f"{part.estimate_s:.0f} s)")
    return took


def child_of(run: CampaignRun, part: CampaignPart) -> str | None:
    """The part's comparison run, found by its tag under the parent run (None where nothing reached the store)."""
    parent, reader = run.nest.parent, run.reader
    if parent is None or reader is None:
        return None
    return reader.child(parent.run_id, run.campaign.part_tag, part.name)


def lease_whole_host(campaign: Campaign, out: Console) -> tuple[Placed, list[PartRun], CoreLease]:
    """Every part placed and given its data before the first starts, on a host the campaign has to itself, and then
    every core leased (waiting for another run's, as wait_for_cores_s allows: a wait that is no part of the
    campaign's budget, so its deadline moves by it). A part this host cannot place is skipped, said."""
    queued = time.monotonic()
    try:
        (placed, skipped), lease = plan_and_lease(lambda: place_all(campaign, out),
                                                  lambda made: [p for c in made[0].values() for p in c.plans],
                                                  campaign.out_dir, campaign.parts[0].comp.cfg.wait_for_cores_s,
                                                  say(out))
        lease.acquire(sorted(os.sched_getaffinity(0)))  # and the rest of the host, for the whole campaign
    except BenchError as exc:
        fail(one_line(exc))
    campaign.deadline += time.monotonic() - queued
    if not placed:
        lease.release()
        fail(f"nothing of the {campaign.kind} can run on this host: "
             + "; ".join([*campaign.left_out, *(f"{p.name}: {p.why}" for p in skipped)]))
    return placed, skipped, lease


def place_all(campaign: Campaign, out: Console) -> tuple[Placed, list[PartRun]]:
    """Each part placed; one this host cannot place is skipped (one that only waits for cores another benchmark run
    holds is not: CoresHeld, which plan_and_lease waits out)."""
    host_to_itself(campaign.kind)
    placed, skipped = {}, []
    for part in campaign.parts:
        try:
            placed[part.name] = plan_comparison(part.comp, out)
        except CoresHeld:
            raise
        except PlacementError as exc:
            skipped.append(PartRun(part.name, SKIPPED, why=f"does not fit this host: {exc}"))
    return placed, skipped


def host_to_itself(kind: str) -> list[int]:
    """A whole-host campaign compares runs, so it has the host to itself: this process's cores, none held by another
    benchmark run, else CoresHeld naming the holders (waited out as wait_for_cores_s allows, or refused). It then
    leases every core for its whole length: a bench or study started beside it queues or is refused in turn."""
    cores = sorted(os.sched_getaffinity(0))
    held = held_by_others(cores)
    if held:
        raise CoresHeld(f"a {kind} compares runs on a host it has to itself; another benchmark run holds "
                        f"{describe(held)}; run it when that ends (or wait_for_cores_s=<seconds>)",
                        describe(held, short=True))
    return cores
