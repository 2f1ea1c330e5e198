"""``make size`` (``python -m suites size [sizing=<name>] [sizing.key=value ...] [bench overrides ...]``): which
profile, how many guests per GPU, how many GPUs and hosts, at what cost per user, for a mix of CAD users (by type)
and ML jobs, each figure with the range its confidence gives, at two QoS levels.

For each candidate profile of the GPU (configs/profile; on a host without a GPU one stand-in whose VMs per GPU allow
the steps, said) and each CAD user type, a consolidation sweep is measured, or reused from the store where an
earlier sizing measured the same thing (same GPU, driver, profile, policy and command line, the folders it writes to
aside): ML alone, one CAD guest alone, then 1, 2, ... CAD guests beside the ML guest, ``sizing.repeats`` times each.
Each curve is read for ``N_safe`` / ``N_point`` / knee at each QoS level (suites/capacity/curve.py), judged for
noise (noise.py: a busy host, smoke sizes, ... give ``inconclusive``, never a count), the mix solved (solver.py),
every profile's density tabled (density.py), the VM to provision said (provision.py), and one MLflow run records it,
its consolidations nested under it, with the report (``<sizing.out_dir>/<time>/sizing.{md,html,png}``).
"""

from __future__ import annotations

import contextlib
import math
import sys
import time
from pathlib import Path
from typing import Any, NamedTuple

from hydra.errors import HydraException
from omegaconf.errors import OmegaConfBaseException
from rich.console import Console

from gpu_probe import inventory
from gpu_probe.datasheet import memory_MiB
from gpu_probe.inventory import Inventory
from suites import store_keys as keys
from suites.capacity import curve, density, fleet_candidates, measured, noise, provision, solver
from suites.capacity.result import SizingResult, title_label
from suites.capacity.size_settings import STRICT, SizingSettings, describe, load_settings, split_args
from suites.commands.size_plan import Part, Plan, plan_parts
from suites.config.schema import one_line, register_configs, run_stamp
from suites.errors import BenchError
from suites.pipeline.jobs import fail
from suites.pipeline.orchestrate import plan_comparison, run_comparison, say
from suites.pipeline.prechecks import refuse_run_dirs, require_parseable
from suites.record import mlflow_runs
from suites.record.outdirs import require_output_dir
from suites.record.reader import run_marks
from suites.record.recorder import Recorder, RunRef
from suites.record.store_reader import StoreReader
from suites.render import sizing_report
from suites.render.once import OnceConsole, OnceStream, SaidOnce
from suites.render.tables import console_width
from suites.run.mixed import MIN_OVERLAP_PCT
from suites.run.outcome import EXIT_INTERRUPTED
from suites.run.plan import plan_and_lease
from suites.run.shield import Shield, interrupt_reason, stop_on_signals
from suites.validity import weakest

KIND = "sizing"
Key = tuple[str, str, str]  # (profile, policy, CAD user type)


class Read(NamedTuple):
    """One consolidation read back from the store."""

    steps: list[curve.Step]
    phases: dict
    doubts: list[noise.Doubt]
    validity: str
    skipped: list[str]  # values read back that are not numbers (a store edited by hand): skipped, said


def stored(store: StoreReader, experiment: str, key: str) -> str | None:
    """The newest finished consolidation recorded with ``key`` (bench.sizing_key), or None."""
    return store.newest_finished(experiment, "consolidation", keys.SIZING_KEY, key)


def read(store: StoreReader, run_id: str) -> Read:
    """A consolidation's steps, phases, what puts its counts in doubt, and what its measurement is worth."""
    run = store.run(run_id)
    skipped: list[str] = []
    phases = store.phases(run_id, skipped)
    steps = measured.steps_of(phases)
    found = [(m.text, m.voids) for m in run_marks(phases, run.params)]
    busy = run.tags.get(keys.HOST_BUSY, "")
    if busy not in ("", "no") and not any(t.startswith("host busy") for t, _ in found):
        found.insert(0, (busy, True))
    doubts = noise.doubts(found, steps, measured.overlap_of(phases), MIN_OVERLAP_PCT)
    worth = weakest([v for k, v in run.tags.items() if k.startswith(keys.VALIDITY_PREFIX)])
    return Read(steps, phases, doubts, worth, skipped)


def reusable(store: StoreReader | None, part: Part, settings: SizingSettings, say_: Any) -> tuple[str, str] | None:
    """(a stored consolidation of ``part``'s measurement, what is in doubt in it: '' where nothing), unless
    measuring again could clear its doubts (a busy host, a short overlap, a failed guest): said either way."""
    found = stored(store, part.comp.cfg.experiment, part.key) if store is not None and settings.reuse else None
    if found is None:
        return None
    doubts = read(store, found).doubts
    if any(d.again for d in doubts):
        say_(f"size: stored consolidation {found} is {noise.text_of(doubts)}: measuring again")
        return None
    return found, noise.text_of(doubts)


def measure(parts: list[Part], settings: SizingSettings, run_dir: Path, recorder: Recorder, ref: RunRef | None,
            out: Console, notes: list[str]) -> tuple[dict[Key, str], str]:
    """Each part's consolidation run id: reused from the store, or measured now (nested under the sizing run); and
    why it stopped before the last part ('' where it did not): an interrupted consolidation is recorded FAILED (so
    never reused) and the sizing goes no further."""
    store = StoreReader(recorder.tracker.uri) if recorder.tracker else None
    ids: dict[Key, str] = {}
    for i, part in enumerate(parts, 1):
        key = (part.profile, part.policy, part.user_type)
        reused = reusable(store, part, settings, say(out))
        if reused:
            ids[key], said = reused
            say(out)(f"== size part {i}/{len(parts)}: {part.label}: reused consolidation run {ids[key]}"
                     + (f" ({said})" if said else "") + " ==")
            continue
        say(out)(f"== size part {i}/{len(parts)}: {part.label}: measuring ==")
        try:
            planned, cores = plan_and_lease(lambda c=part.comp: plan_comparison(c, out), lambda c: c.plans, run_dir,
                                            part.comp.cfg.wait_for_cores_s, say(out))
        except BenchError as exc:  # this profile does not fit here: the others are still sized
            notes.append(f"{part.label}: not measured: {one_line(exc)}")
            say(out)(f"size: {notes[-1]}")
            continue
        with cores:
            reused = reusable(store, part, settings, say(out))  # another sizing may have measured it while this
            if reused:  # one waited for its cores (two sizings of the same thing at once): taken, not measured twice
                ids[key] = reused[0]
                say(out)(f"size: {part.label}: measured meanwhile by another sizing: reused consolidation run "
                         f"{ids[key]}")
                continue
            code = run_comparison(part.comp, run_dir / part.label.replace("/", "-"), out, "size", planned, recorder,
                                  ref, {keys.SIZING_KEY: part.key, keys.SIZING_PART: part.label})
        found = store.child(ref.run_id, keys.SIZING_PART, part.label) if store and ref else None
        if found:
            ids[key] = found
        if code == EXIT_INTERRUPTED:  # what was measured is still read and reported, but answers nothing
            stopped = f"{interrupt_reason()} during {part.label}"
            notes.append(f"{stopped} (its steps so far are read, not an answer); not measured: "
                         + (", ".join(p.label for p in parts[i:]) or "nothing else"))
            return ids, stopped
    return ids, ""


class Curves(NamedTuple):
    by_level: dict[tuple[str, str], dict[str, curve.Capacity]]  # (user type, level) -> profile -> curve
    doubts: dict[tuple[str, str], str]  # (user type, profile) -> inconclusive text
    validity: dict[str, str]
    phases: list[dict]
    policies: dict[str, dict[str, float]]  # policy -> {profile.n_point}
    notes: list[str]  # what reading them skipped


def read_curves(settings: SizingSettings, store: StoreReader, ids: dict[Key, str]) -> Curves:
    """Each consolidation read at each QoS level (the first policy's curves; every policy's strict n_point)."""
    out = Curves({}, {}, {}, [], {}, [])
    first = settings.policies[0]
    for (name, policy, user_type), run_id in ids.items():
        got = read(store, run_id)
        kind = user_type or settings.cad_size
        caps = {level: curve.capacity(got.steps, [curve.Limit(k, v) for k, v in limits.items()])
                for level, limits in settings.levels.items()}
        out.policies.setdefault(policy, {})[f"{name}.n_point"] = float(caps[STRICT].n_point)
        if policy != first and (name, first, user_type) in ids:
            continue
        for level, cap in caps.items():
            out.by_level.setdefault((kind, level), {})[name] = cap
        out.doubts[(kind, name)] = noise.text_of(got.doubts)
        if got.skipped:
            out.notes.append(f"consolidation {run_id}: {len(got.skipped)} value(s) read back are not numbers, "
                             f"skipped ({', '.join(got.skipped[:3])})")
        out.validity[name] = got.validity
        out.phases.append(got.phases)
    return out


def provenance_of(inv: Inventory, plan: Plan, ids: dict[Key, str]) -> dict[str, str]:
    """GPU, driver, mode, policy, clocks, host, the runs drawn on; a fleet's nodes say their own GPU and mode."""
    return {"GPU": ", ".join(str(g.get("name")) for g in inv.gpus) or "no GPU", "sized for": plan.gpu,
            "driver": inv.driver_version or "-", "mode": "vGPU profiles (" + (
                "emulated on this host's GPU" if inv.gpus else "not enforced: no GPU") + ")",
            "scheduler policy": ", ".join(sorted({p for _, p, _ in ids})), "host": f"{inv.hostname} "
            f"({inv.cpu_model}, {inv.cpus_usable} cores)", "runs": ", ".join(ids.values()) or "none",
            "clocks": "as the driver set them (never changed by the suite)", **plan.provenance}


def target_host(settings: SizingSettings, inv: Inventory, plan: Plan) -> solver.Host:
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


def demand_of(plan: Plan, phases: list[dict], reserve_MiB: float) -> solver.Demand:
    cad_peak, ml_peak = measured.demand(phases)
    if plan.fleet and fleet_candidates.replayed(plan.fleet):  # the recording's memory, not the workload's
        cad_peak = ml_peak = math.nan
        plan.notes.append("peak GPU memory not measured (the fleet's NVML is a recording): no profile is excluded "
                          "by its framebuffer")
    elif cad_peak != cad_peak:
        plan.notes.append("peak GPU memory not measured (no GPU): no profile is excluded by its framebuffer")
    return solver.Demand(cad_peak, ml_peak, reserve_MiB)


def solve(settings: SizingSettings, inv: Inventory, plan: Plan, ids: dict[Key, str], uri: str) -> SizingResult:
    """The curves read back from the store (never from memory), each CAD user type's mix solved at the strict level,
    every profile's density at each level, the VM to provision."""
    read_ = read_curves(settings, StoreReader(uri), ids)
    plan.notes.extend(read_.notes)
    demand = demand_of(plan, read_.phases, settings.reserve_MiB)
    host = target_host(settings, inv, plan)
    prices = solver.Prices(settings.price.gpu, settings.price.licence_per_year, settings.years)
    answers, provisions, cands_of = {}, {}, {}
    ml = int(settings.mix.get("ml", 0))
    for i, (kind, users) in enumerate(settings.cad_users.items()):
        caps = read_.by_level.get((kind, STRICT), {})
        cands = [solver.Candidate(c.name, plan.gpu, c.framebuffer_MiB or memory_MiB(c.gpu_model) or 0,
                                  c.max_per_gpu, c.vcpus, c.memory_MiB, caps.get(c.name),
                                  read_.validity.get(c.name, "not measured"), read_.doubts.get((kind, c.name), ""))
                 for c in plan.candidates]
        mix = solver.Mix(users, ml if i == 0 else 0)  # the ML jobs beside the first type's users
        answers[kind] = a = solver.solve(cands, mix, demand, host, settings.spare, prices)
        cands_of[kind] = cands
        if a.recommended is not None:
            chosen = next(c for c in cands if c.profile == a.recommended.profile)
            provisions[kind] = provision.lines(a.recommended, chosen, mix, settings.spare, settings.gpus_per_host)
    first = next(iter(settings.cad_users))
    rows = [r for kind in settings.cad_users for r in density.rows(
        cands_of[kind], {(kind, level): read_.by_level.get((kind, level), {}) for level in settings.levels}, host,
        ml > 0)]
    return SizingResult(solver.Mix(sum(settings.cad_users.values()), ml), plan.gpu, settings.limits,
                        read_.by_level.get((first, STRICT), {}), answers[first], read_.validity,
                        provenance_of(inv, plan, ids), plan.notes,
                        read_.policies if len(read_.policies) > 1 else {}, answers=answers,
                        users=dict(settings.cad_users), curves=read_.by_level, levels=settings.levels, density=rows,
                        provision=provisions)


def host_memory_MiB() -> float:
    import psutil

    return psutil.virtual_memory().total / 2**20


def record(recorder: Recorder, ref: RunRef | None, settings: SizingSettings, result: SizingResult, run_dir: Path,
           files: list[Path], stopped: str = "") -> None:
    """The sizing's MLflow run: its settings, and its figures where they stand (an inconclusive sizing records its
    why as tags, and no count: not the answer's, nor a profile's); KILLED with its reason where it was stopped."""
    rec = result.answer.recommended
    metrics = sizing_report.metrics_of(result)
    params = {**describe(settings), "recommended": rec.profile if rec else "none",
              "validity": result.weakest, **{f"provenance.{k}": v for k, v in result.provenance.items()}}
    tags = {keys.TITLE: title_label(result), keys.ANSWER: " ".join(sizing_report.recommendation(result)[:1])}
    if result.doubt:
        tags[keys.INCONCLUSIVE] = result.doubt
        busy = next((n for n in result.doubt.split("; ") if "host busy" in n), "")
        if busy:
            tags[keys.HOST_BUSY] = busy.removeprefix("inconclusive: ")
    if stopped:
        tags[keys.STOPPED] = stopped
    recorder.comparison_results(ref, mlflow_runs.ComparisonResults(params, metrics, tags), run_dir)
    recorder.finish(ref, files, "KILLED" if stopped else "FINISHED")


def stop_answers(result: SizingResult, stopped: str) -> None:
    """A sizing stopped part-way answers nothing: each type's answer says so (its partial curves stay in the
    report, labelled)."""
    why = f"inconclusive: {stopped}: a part-measured sizing is no answer; to size: size again"
    for a in [result.answer, *result.answers.values()]:
        a.recommended, a.inconclusive, a.error = None, why, why


def end_run(recorder: Recorder, ref: RunRef | None, run_dir: Path, status: str, why: str) -> None:
    """The sizing run ended ``status`` with its reason (bench.stopped), whatever else failed; a consolidation (or
    its phase) an interrupt left RUNNING under it ends KILLED: never FINISHED, so never reused."""
    recorder.comparison_results(ref, mlflow_runs.ComparisonResults({}, {}, {keys.STOPPED: why}), run_dir)
    if ref is not None:
        try:
            ref.tracker.end_running_under(ref.run_id, why)
        except Exception as exc:  # the store's trouble: said, never the sizing's end
            recorder.say(f"warning: runs under the sizing not ended ({one_line(exc)})")
    recorder.finish(ref, [], status)


def prepare(argv: list[str], out: Console) -> tuple[SizingSettings, Inventory, Plan]:
    """Everything checked and composed before anything starts or is written; a problem ends it in one line."""
    register_configs()
    name, mine, overrides = split_args(argv)
    try:
        require_parseable(overrides)
        refuse_run_dirs(overrides, "sizing", "sizing.out_dir", "outputs/sizing")
        settings = load_settings(name, mine)
        require_output_dir(settings.out_dir, "sizing.out_dir")
        inv = inventory.collect()
        return settings, inv, plan_parts(settings, inv, overrides, out)
    except (BenchError, HydraException, OmegaConfBaseException) as exc:
        fail(one_line(exc))


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if {"-h", "--help"} & set(argv):
        print(__doc__)
        return 0
    once = SaidOnce()  # a note repeated by every part and phase is said once, with its count at the end
    out, t0 = OnceConsole(once, width=console_width()), time.monotonic()
    with contextlib.redirect_stderr(OnceStream(once, sys.stderr)):  # type: ignore[type-var]
        stop_on_signals()
        try:
            settings, inv, plan = prepare(argv, out)
        except KeyboardInterrupt as exc:
            say(out)(f"size: {interrupt_reason(exc)} before anything started: nothing written")
            return EXIT_INTERRUPTED
        run_dir = Path(settings.out_dir) / run_stamp()
        run_dir.mkdir(parents=True)
        recorder = Recorder(plan.parts[0].comp.cfg, say(out))
        ref = recorder.start_comparison(f"sizing-{run_dir.name}", {keys.ROLE: KIND, keys.KIND: KIND})
        try:
            code = size_it(settings, (inv, plan), run_dir, (recorder, ref), out)
        except KeyboardInterrupt as exc:  # between parts, or while reading: the run says so, nothing is an answer
            with Shield(say(out), "recording the sizing's end"):
                end_run(recorder, ref, run_dir, "KILLED", interrupt_reason(exc))
            say(out)(f"size: {interrupt_reason(exc)}: the sizing run is recorded KILLED; its consolidations so far "
                     f"are in the store (an unfinished one FAILED: never reused); {run_dir}")
            return EXIT_INTERRUPTED
        except BaseException as exc:  # a fault: the run is FAILED with its reason, then the traceback as ever
            end_run(recorder, ref, run_dir, "FAILED", f"{type(exc).__name__}: {one_line(exc)}")
            raise
        for line in once.summary():
            out.print(line, markup=False, highlight=False, soft_wrap=True)
        say(out)(f"size: {run_dir / 'sizing.html'} ({time.monotonic() - t0:.0f} s)")
    # a mix no measured profile serves is an answer (said, and recorded: recommended=none), not a fault
    return code


def size_it(settings: SizingSettings, where: tuple[Inventory, Plan], run_dir: Path,
            store: tuple[Recorder, RunRef | None], out: Console) -> int:
    """Measure, read, solve, report and record; EXIT_INTERRUPTED where a part was stopped (reported, recorded
    KILLED, no answer)."""
    (inv, plan), (recorder, ref) = where, store
    ids, stopped = measure(plan.parts, settings, run_dir, recorder, ref, out, plan.notes)
    if recorder.tracker is None:
        fail("size: no store to read the curves back from (tracking_uri and its fallback both failed)")
    with Shield(say(out), "reading, reporting and recording the sizing") if stopped else contextlib.nullcontext():
        result = solve(settings, inv, plan, ids, recorder.tracker.uri)
        if stopped:
            stop_answers(result, stopped)
        files = sizing_report.write(result, run_dir)
        for item in sizing_report.console_tables(result):
            out.print(item) if not isinstance(item, str) else say(out)(item)
        record(recorder, ref, settings, result, run_dir, files, stopped)
    return EXIT_INTERRUPTED if stopped else 0


if __name__ == "__main__":
    sys.exit(main())
