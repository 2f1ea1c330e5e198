"""A sizing's end, once its consolidations ran or were reused: the curves read back from the store, each CAD user
type's mix solved at the strict level, every profile's density at each level, the VM to provision; then the report
(``<sizing.out_dir>/<time>/sizing.{md,html,png}``) and the sizing run's params, figures and tags. A sizing stopped
part-way reports what it measured and answers nothing."""

from __future__ import annotations

import math

from rich.console import Console

from gpu_probe.datasheet import memory_MiB
from gpu_probe.inventory import Inventory
from suites import store_keys as keys
from suites.campaign import NOT_RUN, SKIPPED, CampaignRun, Conclude, Conclusion
from suites.capacity import density, provision, solver
from suites.capacity.result import SizingResult, title_label
from suites.errors import fail
from suites.pipeline.orchestrate import say
from suites.record import mlflow_runs
from suites.record.store_reader import StoreReader
from suites.sizing import fleet_candidates, measured, report
from suites.sizing.campaign import measured_ids
from suites.sizing.plan import SizingPlan
from suites.sizing.results import Key, read_curves
from suites.sizing.settings import STRICT, SizingSettings, describe


def provenance_of(inv: Inventory, plan: SizingPlan, ids: dict[Key, str]) -> dict[str, str]:
    """GPU, driver, mode, policy, clocks, host, the runs drawn on; a fleet's nodes say their own GPU and mode."""
    return {"GPU": ", ".join(str(g.get("name")) for g in inv.gpus) or "no GPU", "sized for": plan.gpu,
            "driver": inv.driver_version or "-", "mode": "vGPU profiles (" + (
                "emulated on this host's GPU" if inv.gpus else "not enforced: no GPU") + ")",
            "scheduler policy": ", ".join(sorted({p for _, p, _ in ids})), "host": f"{inv.hostname} "
            f"({inv.cpu_model}, {inv.cpus_usable} cores)", "runs": ", ".join(ids.values()) or "none",
            "clocks": "as the driver set them (never changed by the suite)", **plan.provenance}


def target_host(settings: SizingSettings, inv: Inventory, plan: SizingPlan) -> solver.Host:
    """The GPU server sized for: sizing.host, else this host where it has the GPU (a host without one, or a fleet's
    runner, describes no GPU server)."""
    here = bool(inv.gpus) and not plan.fleet
    host = solver.Host(settings.gpus_per_host, settings.host.cores or (inv.cpus_usable if here else None),
                       settings.host.memory_MiB or (int(host_memory_MiB()) if here else None),
                       settings.host.cpu_overcommit)
    if host.cores is None or host.memory_MiB is None:
        plan.notes.append("host CPU and memory: not limits (" + ("the fleet's hosts are not described" if plan.fleet
                          else "no GPU here") + ", and sizing.host.cores / memory_MiB not given)")
    return host


def demand_of(plan: SizingPlan, phases: list[dict], reserve_MiB: float) -> solver.Demand:
    cad_peak, ml_peak, stated = measured.demand(phases)
    if plan.fleet and fleet_candidates.replayed(plan.fleet):  # the recording's memory, not the workload's
        cad_peak = ml_peak = math.nan
        why = "the fleet's NVML is a recording"
    else:
        why = "no GPU"
    if cad_peak != cad_peak and stated == stated:  # a CAD guest's own statement: a floor, never a measurement
        cad_peak = stated
        plan.notes.append(f"peak GPU memory not measured ({why}): a CAD guest needs at least the {stated:,.0f} MiB "
                          "its viewsets state (the renderer's count): profiles below it are left out; ML guests' "
                          "need is not known, no profile is left out for them")
    elif cad_peak != cad_peak:
        plan.notes.append(f"peak GPU memory not measured ({why}): no profile is excluded by its framebuffer")
    return solver.Demand(cad_peak, ml_peak, reserve_MiB)


def solve(settings: SizingSettings, inv: Inventory, plan: SizingPlan, ids: dict[Key, str], uri: str) -> SizingResult:
    """The curves read back from the store (never from memory), each CAD user type's mix solved at the strict level,
    every profile's density at each level, the VM to provision."""
    read_ = read_curves(settings, StoreReader(uri), ids)
    plan.notes.extend(read_.notes)
    demand = demand_of(plan, read_.phases, settings.reserve_MiB)
    host = target_host(settings, inv, plan)
    prices = solver.Prices(settings.price.gpu, settings.price.licence_per_year, settings.years)
    answers, provisions, cands_of = {}, {}, {}
    ml = int(settings.mix.get("ml", 0))
    for i, (user_type, users) in enumerate(settings.cad_users.items()):
        caps = read_.by_level.get((user_type, STRICT), {})
        cands = [solver.Candidate(c.name, plan.gpu, c.framebuffer_MiB or memory_MiB(c.gpu_model) or 0,
                                  c.max_per_gpu, c.vcpus, c.memory_MiB, caps.get(c.name),
                                  read_.validity.get(c.name, "not measured"), read_.doubts.get((user_type, c.name), ""))
                 for c in plan.candidates]
        mix = solver.Mix(users, ml if i == 0 else 0)  # the ML users beside the first type's users
        answers[user_type] = a = solver.solve(cands, mix, demand, host, settings.spare, prices)
        cands_of[user_type] = cands
        if a.recommended is not None:
            chosen = next(c for c in cands if c.profile == a.recommended.profile)
            provisions[user_type] = provision.lines(a.recommended, chosen, mix, settings.spare, settings.gpus_per_host)
    first = next(iter(settings.cad_users))
    rows = [r for of in settings.cad_users for r in density.rows(
        cands_of[of], {(of, level): read_.by_level.get((of, level), {}) for level in settings.levels}, host, ml,
        demand)]
    return SizingResult(solver.Mix(sum(settings.cad_users.values()), ml), plan.gpu, settings.limits,
                        read_.by_level.get((first, STRICT), {}), answers[first], read_.validity,
                        provenance_of(inv, plan, ids), plan.notes,
                        read_.policies if len(read_.policies) > 1 else {}, answers=answers,
                        users=dict(settings.cad_users), curves=read_.by_level, levels=settings.levels, density=rows,
                        provision=provisions)


def host_memory_MiB() -> float:
    import psutil

    return psutil.virtual_memory().total / 2**20


def results_of(settings: SizingSettings, result: SizingResult) -> mlflow_runs.ParentResults:
    """The sizing run's settings, and its figures where they stand (an inconclusive sizing records its why as tags,
    and no count: not the answer's, nor a profile's)."""
    rec = result.answer.recommended
    params = {**describe(settings), "recommended": rec.profile if rec else "none",
              "binds": f"{rec.binding[1]} (safe), {rec.binding[0]} (point)" if rec else "-",
              "validity": result.weakest, **{f"provenance.{k}": v for k, v in result.provenance.items()}}
    tags = {keys.TITLE: title_label(result), keys.ANSWER: " ".join(report.recommendation(result)[:1])}
    if result.doubt:
        tags[keys.INCONCLUSIVE] = result.doubt
        busy = next((n for n in result.doubt.split("; ") if "host busy" in n), "")
        if busy:
            tags[keys.HOST_BUSY] = busy.removeprefix("inconclusive: ")
    return mlflow_runs.ParentResults(params, report.metrics_of(result), tags)


def stop_answers(result: SizingResult, stopped: str) -> None:
    """A sizing stopped part-way answers nothing: each type's answer says so (its partial curves stay in the
    report, labelled)."""
    why = f"inconclusive: {stopped}: a part-measured sizing is no answer; to size: size again"
    for a in [result.answer, *result.answers.values()]:
        a.recommended, a.inconclusive, a.error = None, why, why


def notes_of(run: CampaignRun) -> list[str]:
    """What the campaign left unmeasured: a profile that did not fit, a consolidation past the deadline, the parts
    after an interrupt."""
    notes = [f"{p.name}: {p.why}" for p in run.left(NOT_RUN) if p.why.startswith("not measured")]
    notes += [f"{p.name}: not measured: {p.why}" for p in run.left(SKIPPED)]
    if run.stopped:
        left = [p.name for p in run.left(NOT_RUN) if not p.why.startswith("not measured")]
        notes.append(f"{run.stopped} (its counts so far are read, not an answer); not measured: "
                     + (", ".join(left) or "nothing else"))
    return notes


def concluder(settings: SizingSettings, where: tuple[Inventory, SizingPlan], out: Console) -> Conclude:
    """What the executor calls once the consolidations ran: read, solve, report, record (KILLED where stopped)."""
    inv, plan = where

    def conclude(run: CampaignRun) -> Conclusion:
        tracker = run.nest.recorder.tracker
        if tracker is None:
            fail("size: no store to read the curves back from (tracking_uri and its fallback both failed)")
        plan.notes.extend(notes_of(run))
        result = solve(settings, inv, plan, measured_ids(plan, run), tracker.uri)
        if run.stopped:
            stop_answers(result, run.stopped)
        files = report.write(result, run.run_dir)
        for item in report.console_tables(result):
            out.print(item) if not isinstance(item, str) else say(out)(item)
        run.record(results_of(settings, result))
        return Conclusion(files, "KILLED" if run.stopped else "FINISHED")

    return conclude
