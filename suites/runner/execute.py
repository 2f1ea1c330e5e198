"""Run one scenario: place, start guests, barrier, sample, collect, record.

Nothing measured is lost: every finished guest's result is written to the
run directory before MLflow is touched, a failed or killed guest becomes a
recorded failure, and Ctrl-C stops the guests and still records the rest.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpu_probe import inventory, vocab
from gpu_probe.inventory import Inventory
from gpu_probe.sampler import Sampler
from suites.config import Backend, BenchConfig
from suites.guest.protocol import GuestResult, GuestSpec
from suites.runner.guests import GuestProcess
from suites.runner.placement import Placement, place
from suites.runner.progress import ProgressView
from suites.workloads import REGISTRY

EXIT_PARTIAL = 1
EXIT_INTERRUPTED = 130


@dataclass
class GuestOutcome:
    spec: GuestSpec
    placement: Placement
    result: GuestResult
    log_path: Path
    sampled: dict[str, float] = field(default_factory=dict)  # sampler aggregates for this guest


@dataclass
class ScenarioOutcome:
    status: str  # ok | partial | failed | interrupted
    guests: list[GuestOutcome]
    makespan_s: float | None
    reasons: list[str]
    inventory: Inventory
    data: dict[str, Any]
    sampler: Sampler

    @property
    def exit_code(self) -> int:
        return {"ok": 0, "interrupted": EXIT_INTERRUPTED}.get(self.status, EXIT_PARTIAL)


def build_specs(cfg: BenchConfig, workload: Any, placements: list[Placement], data: dict[str, Any],
                first: int = 0) -> list[GuestSpec]:
    from omegaconf import OmegaConf

    workload_cfg = OmegaConf.to_container(OmegaConf.structured(workload), enum_to_str=True)
    return [GuestSpec(guest_id=p.guest_id, profile=cfg.profile.name, workload=workload.name,
                      workload_config=dict(workload_cfg), data=data, vcpus=p.vcpus, gpus=p.gpus,  # type: ignore[arg-type]
                      framebuffer_MiB=cfg.profile.framebuffer_MiB, memory_MiB=cfg.profile.memory_MiB,
                      seed=cfg.seed + first + i, repeats=cfg.repeats, profile_gpus=cfg.profile.gpus, env=p.env)
            for i, p in enumerate(placements)]


def workload_groups(cfg: BenchConfig) -> list[tuple[Any, int]]:
    """(workload config, guests) per group: the scenario's mix, else guests x the selected workload."""
    if not cfg.scenario.mix:
        return [(cfg.workload, cfg.scenario.guests)]
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    from suites.config import one_line
    from suites.errors import BenchError, ConfigError
    from suites.runner.compare import compose_with

    groups = []
    for g in cfg.scenario.mix:  # each group's workload is its own config file plus its own overrides
        try:
            wcfg, _ = compose_with([f"workload={g.workload}", *g.overrides])
        except (BenchError, HydraException, OmegaConfBaseException) as exc:
            raise ConfigError(f"scenario.mix[{g.workload}]: {one_line(exc)}") from exc
        groups.append((wcfg.workload, g.guests))
    return groups


def describe(cfg: BenchConfig) -> str:
    """'2 x m60-8q running graphics-replay' or, for a mix, '3 x m60-8q running 2 x graphics-replay + 1 x ...'."""
    if not cfg.scenario.mix:
        return f"{cfg.scenario.guests} x {cfg.profile.name} running {cfg.workload.name}"
    total = sum(g.guests for g in cfg.scenario.mix)
    return f"{total} x {cfg.profile.name} running " + " + ".join(f"{g.guests} x {g.workload}" for g in cfg.scenario.mix)


Plan = tuple[Inventory, list[Placement], list[GuestSpec], dict[str, Any]]


def plan(cfg: BenchConfig, base_dir: Path) -> Plan:
    """Everything that can fail before a process starts: inventory, placement, data."""
    inv = inventory.collect()
    groups = workload_groups(cfg)
    placements = place_guests(cfg, sum(n for _, n in groups), inv, base_dir)
    specs: list[GuestSpec] = []
    sources: list[dict[str, Any]] = []
    for workload, n in groups:
        data = REGISTRY[workload.name].resolve_data(workload, cfg.data, base_dir, cfg.seed)
        specs += build_specs(cfg, workload, placements[len(specs): len(specs) + n], data, first=len(specs))
        sources.append(data)
    if len(sources) == 1:
        return inv, placements, specs, sources[0]
    merged = {"source": " + ".join(str(d.get("source", "none")) for d in sources),
              "root": ", ".join(str(d.get("root", "-")) for d in sources)}
    return inv, placements, specs, merged


def place_guests(cfg: BenchConfig, n: int, inv: Inventory, base_dir: Path) -> list[Placement]:
    if cfg.backend is Backend.ray:  # Ray's view of the cluster decides; CPUs and GPUs are picked at start
        from suites.runner import ray_guests

        nodes = ray_guests.connect(cfg.ray, base_dir)
        return ray_guests.place(cfg.profile, n, nodes, cfg.scenario.cpu_overcommit, cfg.ray.address)
    host_cpus = sorted(os.sched_getaffinity(0))  # Linux: the cores this runner may hand out
    return place(cfg.profile, n, inv, host_cpus, cpu_overcommit=cfg.scenario.cpu_overcommit)


def start_guests(specs: list[GuestSpec], placements: list[Placement], cfg: BenchConfig, log_dir: Path,
                 base_dir: Path, guests: list[GuestProcess]) -> None:
    """Start every guest process (filling ``guests`` as they exist, so an interrupt can stop them)."""
    if cfg.backend is Backend.ray:
        from suites.runner import ray_guests

        # Joined at plan time, but a comparison's earlier phase has left again; without this Ray would
        # silently start a private local instance for the next phase instead of using ray.address.
        ray_guests.connect(cfg.ray, base_dir)
        guests += ray_guests.make_guests(specs, placements, log_dir)
        ray_guests.start(guests, placements, cfg.profile.vcpus, cfg.scenario.cpu_overcommit,
                         cfg.scenario.start_timeout_s)
        return
    for s in specs:
        guests.append(GuestProcess(s, log_dir / f"{s.guest_id}.log"))
        guests[-1].start()


def wait_at_barrier(guests: list[GuestProcess], view: ProgressView, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while any(g.state == "starting" for g in guests):
        for g in guests:
            g.pump()
        view.update(guests)
        if time.monotonic() > deadline:
            for g in guests:
                if g.state == "starting":
                    g.kill(f"did not reach the start barrier within {timeout_s:.0f} s")
        time.sleep(0.05)


def supervise(guests: list[GuestProcess], view: ProgressView, timeout_s: float) -> None:
    """Until every guest is finished: events, progress, time limit, memory limit."""
    deadline = time.monotonic() + timeout_s
    next_mem_check = 0.0
    while not all(g.finished for g in guests):
        for g in guests:
            g.pump()
        view.update(guests)
        now = time.monotonic()
        if now > deadline:
            for g in guests:
                if not g.finished:
                    g.kill(f"timed out after scenario.timeout_s={timeout_s:.0f} s")
        if now > next_mem_check:
            next_mem_check = now + 1.0
            for g in guests:
                rss = g.rss_MiB() if not g.finished else 0.0
                if rss > g.spec.memory_MiB:
                    g.kill(f"guest memory exceeded: RSS {rss:.0f} MiB > profile {g.spec.memory_MiB} MiB")
        time.sleep(0.05)
    view.update(guests)


def run_guests(specs: list[GuestSpec], placements: list[Placement], cfg: BenchConfig, sampler: Sampler,
               log_dir: Path, base_dir: Path) -> tuple[list[GuestProcess], float | None, float | None, bool]:
    """Start all guests, release them together, supervise; (guests, t_release, t_end, interrupted)."""
    guests: list[GuestProcess] = []
    t_release = t_end = None
    interrupted = False
    try:
        with ProgressView(cfg.progress.value) as view:
            start_guests(specs, placements, cfg, log_dir, base_dir, guests)
            for g in guests:
                g.watch(sampler)
            wait_at_barrier(guests, view, cfg.scenario.start_timeout_s)
            t_release = time.time()
            for g in guests:
                g.release()
            supervise(guests, view, cfg.scenario.timeout_s)
            t_end = time.time()
    except KeyboardInterrupt:
        interrupted = True
        for g in guests:
            if not g.finished:
                g.pump()  # keep a result that arrived just before Ctrl-C
                g.kill("interrupted (Ctrl-C)")
    finally:
        for s in specs[len(guests):]:  # interrupted before these existed: still one recorded failure each
            guests.append(GuestProcess(s, log_dir / f"{s.guest_id}.log"))
            guests[-1].fail("interrupted before it started")
        for g in guests:
            g.terminate()  # idempotent: no guest outlives the runner
        if cfg.backend is Backend.ray:
            from suites.runner import ray_guests

            ray_guests.shutdown()
    return guests, t_release, t_end, interrupted


def outcome_of(guests: list[GuestProcess], placements: list[Placement], sampler: Sampler,
               t_release: float | None, t_end: float | None, interrupted: bool,
               inv: Inventory, data: dict[str, Any]) -> ScenarioOutcome:
    outcomes = [GuestOutcome(g.spec, p, g.final_result(), g.log_path, sampler.aggregate(f"{g.id}."))
                for g, p in zip(guests, placements, strict=True)]
    failed = [o for o in outcomes if not o.result.ok]
    reasons = [f"{o.spec.guest_id}: {o.result.error}" for o in failed]
    if interrupted:
        status = "interrupted"
    elif not failed:
        status = "ok"
    else:
        status = "failed" if len(failed) == len(outcomes) else "partial"
    ends = [o.result.t_train_end for o in outcomes if o.result.ok and o.result.t_train_end]
    makespan = (max(ends) - t_release) if ends and t_release else None
    if status == "ok" and t_end and t_release:
        makespan = t_end - t_release
    return ScenarioOutcome(status, outcomes, makespan, reasons, inv, data, sampler)


def execute(cfg: BenchConfig, base_dir: Path, run_dir: Path, config_yaml: str,
            planned: Plan | None = None) -> ScenarioOutcome:
    """The whole scenario (planned first unless ``planned`` is given); the caller prints and records."""
    from suites.runner import record

    inv, placements, specs, data = planned or plan(cfg, base_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "config.yaml").write_text(config_yaml)
    (run_dir / "inventory.json").write_text(json.dumps(inv.as_dict(), indent=2, default=str))
    sampler = Sampler(cfg.sampler.rate_hz)
    with sampler:
        guests, t_release, t_end, interrupted = run_guests(specs, placements, cfg, sampler, run_dir, base_dir)
    outcome = outcome_of(guests, placements, sampler, t_release, t_end, interrupted, inv, data)
    record.write_local(outcome, run_dir)  # before MLflow: results survive a tracking failure
    return outcome


def host_summary(sampler: Sampler) -> dict[str, float]:
    """Sampler aggregates for the host and GPUs (guest columns go to child runs)."""
    out = {k: v for k, v in sampler.aggregate().items() if k.startswith(("host_", "gpu"))}
    out[vocab.SAMPLE_RATE.key] = sampler.achieved_rate_hz
    out[vocab.SAMPLER_CPU.key] = sampler.cpu_pct
    energy = energy_J(sampler.rows)
    if energy == energy:  # only where some GPU's power was readable
        out[vocab.ENERGY.key] = energy
    return out


def energy_J(rows: list[dict[str, Any]]) -> float:
    """Trapezoid integral of every GPU's board power over the samples (NaN without power readings)."""
    import math

    cols = sorted({k for r in rows for k in r if k.startswith("gpu") and k.endswith(vocab.POWER.key)})
    total, seen = 0.0, False
    for col in cols:
        pts = [(r["t_s"], r[col]) for r in rows if isinstance(r.get(col), (int, float)) and not math.isnan(r[col])]
        for (t0, p0), (t1, p1) in zip(pts, pts[1:], strict=False):
            total += (t1 - t0) * (p0 + p1) / 2
            seen = True
    return total if seen else math.nan
