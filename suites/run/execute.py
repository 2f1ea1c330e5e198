"""Run one planned scenario: start guests, release them together at the barrier, sample, collect.

Nothing measured is lost: a failed or killed guest becomes a recorded failure,
and Ctrl-C stops the guests and still returns what was measured. The outcome
is plain data; the caller writes, prints and records it.
"""

from __future__ import annotations

import contextlib
import math
import sys
import threading
import time
import traceback
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from gpu_probe import vocab
from gpu_probe.hostload import HostLoad, other_load
from gpu_probe.sampler import Sampler
from gpu_probe.windows import timed_gpu
from suites.backends.base import Timing
from suites.backends.forkserver import ForkServer
from suites.backends.handle import GuestHandle, GuestPipe, preload_of
from suites.backends.mps import MpsDaemon
from suites.config.schema import Sharing
from suites.errors import first_line
from suites.run import outcome as run_outcome
from suites.run.outcome import (
    GuestOutcome,
    ScenarioOutcome,
    busy_check_on,
    busy_text,
    busy_worst,
    measured_validity,
    missed_target,
)
from suites.run.plan import Plan
from suites.run.progress import ProgressView
from suites.run.shield import Shield, interrupt_reason


@dataclass
class Around:
    """What a comparison's runs share: the MPS daemon it started for all of them (:func:`one_daemon`, or None), its
    preloaded guest, and one look at the host before its first run. A later run's host is judged by that look and
    by its own sampling (other processes' CPU during it): a look of its own cost half a second of every repeat."""

    daemon: MpsDaemon | None = None
    looked: list[HostLoad | None] = field(default_factory=list)
    looking: threading.Thread | None = None
    forks: ForkServer | None = None  # its preloaded guest (a comparison's: suites/backends/forkserver.py)

    def close(self) -> None:
        """Its preloaded guest stopped (the guests it forked are stopped with their runs)."""
        if self.forks is not None:
            self.forks.close()

    def preload(self, plans: list[Plan]) -> None:
        """Its preloaded guest started now, importing what the guests the plans fork will have imported (a
        comparison's command calls it before it opens its store: the zygote imports torch on another core while this
        process imports MLflow, 2-3 s each on a 2-core host, and the first guest is forked at once). Nothing is
        forked here; where no guest may be forked, nothing is started."""
        modules = [m for p in plans if p.backend.forks_guests for s in p.specs for m in preload_of(s.workload) or []]
        if modules:
            self.forks = self.forks or ForkServer()
            self.forks.prewarm(list(dict.fromkeys(modules)))

    def look_now(self, threshold_pct: float) -> None:
        """Start the look on a thread of its own, while the command composes and opens its store: it counts other
        processes' CPU only (this process tree's is taken out), and its half second of sleep was a wait of its own."""
        if self.looking is None and not self.looked and busy_check_on(threshold_pct):
            self.looking = threading.Thread(target=lambda: self.looked.append(other_load(0.5)), name="host-look",
                                            daemon=True)
            self.looking.start()

    def host_before(self, threshold_pct: float) -> HostLoad | None:
        if self.looking is not None:
            self.looking.join()
            self.looking = None
            said_if_busy(self.looked[0] if self.looked else None, threshold_pct)
        if not self.looked:
            self.looked.append(look_at_host(threshold_pct))
        return self.looked[0]


def execute(plan: Plan, log_dir: Path, around: Around | None = None) -> ScenarioOutcome:
    """The whole scenario; each guest's log goes to ``log_dir/<guest>.log``. With ``sharing=mps`` the run's own
    MPS daemon is started first (MpsError, one line, before any guest) and quit after the guests, on every path;
    ``around``: what its comparison shares among its runs (the daemon, used and left running; the host's look)."""
    log_dir.mkdir(parents=True, exist_ok=True)
    around = around or Around()
    before = around.host_before(plan.cfg.host_busy_pct)
    sampler = Sampler(plan.cfg.sampler.rate_hz)
    timing = Timing(t_start=time.time())
    shared = around.daemon
    plan.backend.forks = around.forks
    daemon = start_sharing(plan, log_dir, shared)
    try:
        with sampler:
            if daemon is not None and (pid := daemon.pid()) is not None:  # its CPU is the run's, not others'
                sampler.watch_helper(pid)
            if around.forks is not None:  # the preloaded process too (its guests are watched as guests)
                around.forks.watched_by(lambda pid: sampler.watch_helper(pid, descendants=False))
            try:
                guests, interrupted = run_guests(plan, sampler, log_dir, timing)
            finally:
                if around.forks is not None:
                    around.forks.watched_by(None)
    finally:
        if daemon is not None and daemon is not shared:
            with Shield(warn, "stopping the run's MPS daemon", give_up=None):
                daemon.stop()
    outcome = outcome_of(plan, guests, sampler, timing, interrupted)
    during = outcome.host_metrics.get(f"{vocab.HOST_OTHER_CPU.key}.mean", math.nan)
    outcome.host_busy = busy_text(before, during, plan.cfg.host_busy_pct)
    outcome.host_metrics[f"{vocab.HOST_OTHER_CPU.key}.worst"] = busy_worst(before, during)
    if outcome.host_busy and plan.cfg.strict and outcome.status == "ok":  # measured and kept, not a success
        outcome.status = "failed"
        outcome.reasons.append(f"{outcome.host_busy} during the run (strict=true)")
    if daemon is not None and daemon is not shared and daemon.stop_note:
        outcome.reasons.append(daemon.stop_note)
    left = still_running(guests)
    if left:  # recorded, never silent: a guest the runner could not stop is a broken run
        outcome.reasons += [f"{g.id}: still running after the run ended (pid {g.pid}); killed again" for g in left]
        outcome.status = "failed" if outcome.status == "ok" else outcome.status
        for g in left:
            g.terminate()
    return outcome


def look_at_host(threshold_pct: float) -> HostLoad | None:
    """Half a second of the host before the guests start: a host that other processes keep busy is said now."""
    if not busy_check_on(threshold_pct):
        return None
    return said_if_busy(other_load(0.5), threshold_pct)


def said_if_busy(load: HostLoad | None, threshold_pct: float) -> HostLoad | None:
    if load is not None and load.other_pct > threshold_pct:
        warn(f"note: host busy before the run ({load.text()} > host_busy_pct={threshold_pct:g}): every figure is "
             "marked host busy and its verdicts inconclusive; strict=true refuses such a host")
    return load


def uses_mps(plan: Plan) -> bool:
    return plan.cfg.sharing is Sharing.mps and any(p.gpus for p in plan.placements)


def start_sharing(plan: Plan, log_dir: Path, shared: MpsDaemon | None = None) -> MpsDaemon | None:
    """``sharing=mps``: the run's MPS daemon in ``log_dir/mps/`` (or its comparison's ``shared`` one, said in each
    guest's note), and every guest told where it is."""
    if not uses_mps(plan):
        return None
    daemon = shared if shared is not None else MpsDaemon(log_dir / "mps").start()
    for spec in plan.specs:
        spec.env = {**spec.env, **daemon.env()}
    said = [daemon.start_note, SHARED_NOTE if shared is not None else ""]
    for p in plan.placements if any(said) else []:
        p.note = "; ".join(x for x in (p.note, *said) if x)
    return daemon


SHARED_NOTE = "one MPS daemon for all of its comparison's runs"


@contextlib.contextmanager
def one_daemon(plans: list[Plan], folder: Path) -> Iterator[MpsDaemon | None]:
    """One MPS daemon for every run of ``plans`` where all of them share their GPU by MPS (a consolidation's counts,
    repeated): started once before the first (its ``mps/`` in ``folder``), quit after the last, on every path, not
    one per run; None where they do not all use MPS (each run then starts its own or none)."""
    if not plans or not all(uses_mps(p) for p in plans):
        yield None
        return
    daemon = MpsDaemon(folder / "mps").start()
    try:
        yield daemon
    finally:
        with Shield(warn, "stopping the comparison's MPS daemon", give_up=None):
            daemon.stop()
        if daemon.stop_note:
            warn(f"note: {daemon.stop_note}")


def still_running(guests: list[GuestHandle]) -> list[GuestHandle]:
    """Local guest processes that have not exited although the run is over (each was stopped in run_guests)."""
    return [g for g in guests if isinstance(g.pipe, GuestPipe) and g.pipe.proc is not None
            and g.pipe.proc.poll() is None]


def run_guests(plan: Plan, sampler: Sampler, log_dir: Path, timing: Timing) -> tuple[list[GuestHandle], bool]:
    """Start all guests, release them together, supervise; (guests, interrupted).

    Three things stop guests, each needed on its own path (tests/test_bench_e2e.py sees each with guests that
    stay silent, so no broken pipe ends them first): Ctrl-C kills them with that reason; a fault of the runner's
    own mid-run records it as their failure and ``finally`` stops them; a runner that dies outright takes them
    with it (PR_SET_PDEATHSIG in the guest).
    """
    cfg, backend = plan.cfg, plan.backend
    guests: list[GuestHandle] = []
    interrupted = False
    try:
        with ProgressView(cfg.progress.value, start_timeout_s=cfg.scenario.start_timeout_s) as view:
            backend.start(plan.specs, plan.placements, log_dir, guests)
            for g in guests:
                g.watch(sampler)
            backend.supervise(guests, view.update, cfg.scenario.start_timeout_s, cfg.scenario.timeout_s, timing)
    except KeyboardInterrupt as exc:  # Ctrl-C, or SIGTERM / SIGHUP (suites/run/shield.py)
        interrupted, why = True, interrupt_reason(exc)  # read before the shield replaces the signal handlers
        with Shield(warn, "stopping the guests", give_up=None):
            for g in guests:
                if not g.finished:
                    g.pump()  # keep a result that arrived just before Ctrl-C
                    g.kill(why)
    except Exception as exc:  # the runner's own fault (a guest that cannot start, a backend error): recorded
        reason = f"stopped: the runner failed mid-run ({first_line(exc)}; traceback in runner-fault.log)"
        try:
            (log_dir / "runner-fault.log").write_text(traceback.format_exc())
        except OSError:
            pass
        for g in guests:
            g.pump()
            g.fail(reason)
    finally:
        with Shield(warn, "stopping the guests", give_up=None):
            for s in plan.specs[len(guests):]:  # never started: still one recorded failure each
                guests.append(GuestHandle(s, log_dir / f"{s.guest_id}.log"))
                guests[-1].fail("interrupted before it started" if interrupted else "never started")
            for g in guests:
                g.terminate()  # idempotent: no guest outlives the runner
            backend.shutdown()
    return guests, interrupted


def warn(text: str) -> None:
    """A note on standard error, folded at spaces to 120 columns as every printed line is (never inside a word)."""
    import textwrap

    print(textwrap.fill(text, 120, subsequent_indent="  ", break_long_words=False, break_on_hyphens=False),
          file=sys.stderr, flush=True)


def outcome_of(plan: Plan, guests: list[GuestHandle], sampler: Sampler, timing: Timing,
               interrupted: bool) -> ScenarioOutcome:
    samples = sampler.snapshot()
    outcomes = []
    for g, p in zip(guests, plan.placements, strict=True):
        result = g.final_result()
        sampled = {**samples.aggregate(f"{g.id}."), **samples.node_metrics(g.id),  # a remote guest's node sampler
                   **timed_gpu(samples, result.windows)}  # the GPUs over its timed windows, beside the whole run
        if plan.cfg.strict and result.ok and missed_target(result.metrics):  # measured and kept, but no success
            result.status, result.error = "failed", f"{missed_target(result.metrics)} (strict=true)"
        outcomes.append(GuestOutcome(g.spec, p, result, g.log_path, sampled, measured_validity(p, result)))
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
    host = {**samples.host_metrics(), **run_outcome.overlaps(outcomes)}  # the pairs' overlap: recorded alike
    return ScenarioOutcome(status, outcomes, makespan, reasons, plan.inventory, plan.data, samples, host,
                           started_at=timing.t_start or 0.0, ended_at=time.time(),
                           released_at=t_release or 0.0, results_at=t_end or 0.0)
