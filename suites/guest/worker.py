"""The guest's work: prepare, wait at the start barrier, train (each repeat), evaluate, report.

Rank 0 speaks the protocol; with ``workload.ranks`` > 1 it also spawns and
leads the other data-parallel ranks (:mod:`suites.guest.ranks`).
"""

from __future__ import annotations

import os
import sys
import threading
import time
from typing import Any

from gpu_probe.shapes import JsonObject
from gpu_probe.stats import aggregate_repeats
from suites import process_gc
from suites.errors import first_line
from suites.guest import ranks
from suites.guest.protocol import GO, STOP, GuestResult, GuestSpec, event
from suites.guest.setup import make_workload, sharing_seen
from suites.workloads import timing
from suites.workloads.timing import StepMeter


def run(spec: GuestSpec, send: Any, t_proc_start: float) -> GuestResult:
    """Rank 0 (the only rank unless the workload asks for more): it alone speaks the protocol."""
    workload, cfg = make_workload(spec)
    workload.ctx.info.update(sharing_seen())
    world = ranks.world_size(cfg, spec) if workload.process_ranks else 1  # Keras replicates in-process
    workload.ctx.world_size = world  # before prepare(): it shards the data by rank
    peers: list[Any] = []
    try:
        if world > 1:
            port = ranks.free_port()
            peers = ranks.spawn_peers(spec, world, port)
            ranks.init(0, world, port, bool(spec.gpus), spec.peer_timeout_s)
            workload.ctx.info["ranks"] = world
        return train_and_report(spec, workload, cfg, send, t_proc_start)
    finally:
        ranks.shutdown()
        for p in peers:
            p.join(timeout=10)
            if p.is_alive():
                p.kill()


def train_and_report(spec: GuestSpec, workload: Any, cfg: Any, send: Any, t_proc_start: float) -> GuestResult:
    ctx, t_prepare = workload.ctx, time.time()
    with process_gc.importing():  # torch and kin load here: collection paused while they do (suites/process_gc.py)
        workload.prepare()
    t_prepared = time.time()
    check_device(spec, ctx.info, cfg)
    open_ended = bool(getattr(cfg, "until_stopped", False))
    if open_ended and ctx.world_size > 1:  # the runner's stop reaches rank 0 only; ranks must stop together
        open_ended = False
        ctx.info["until_stopped"] = f"not applied: {ctx.world_size} ranks (sized by workload.min_window_s)"
    chosen = timing.calibrate(workload, cfg, open_ended, lambda step_s: ranks.slowest(step_s, workload),
                              spec.calibration, timing.RANKS_MARGIN if ctx.world_size > 1 else timing.MARGIN)
    ctx.info.update(chosen)
    # the harness's cost, by part (suites/run/harness.py): what of the set-up was the workload's own, what calibration
    ctx.info["setup"] = {"start_s": round(t_prepare - t_proc_start, 4), "prepare_s": round(t_prepared - t_prepare, 4),
                         "calibrate_s": round(time.time() - t_prepared, 4)}
    ranks.barrier()  # every rank has prepared
    setup = time.time() - t_proc_start
    log(spec, f"ready after {setup:.1f} s, waiting at the start barrier")
    send(event("ready", setup_time_s=setup))
    command = sys.stdin.readline().strip()
    if command != GO:
        return GuestResult(spec.guest_id, "failed", error=f"aborted at the start barrier ({command or 'EOF'})")
    ranks.barrier()  # releases the other ranks
    stop = listen_for_stop() if open_ended else None
    log(spec, "training started")
    total = workload.total_steps() * spec.repeats
    runs: list[dict[str, float]] = []
    windows: list[tuple[float, float]] = []  # each repeat's timed window (epoch s): where its GPU figures come from
    t_train_start = time.time()
    for r in range(spec.repeats):
        if r:
            workload.build()  # fresh weights and optimizer; the data stays where it is
        done_before = r * workload.total_steps()
        meter = StepMeter(cfg.warmup_steps, total,
                          lambda done, tot, b=done_before: send(event("progress", done=b + done, total=tot)),
                          min_steps=cfg.min_timed_steps, min_s=cfg.min_timed_s)
        timing.hold(meter, cfg, chosen, ctx.world_size, stop.is_set if stop is not None else None)
        compiled = workload.compiled_frames()
        meter.start()
        workload.train(meter)
        metrics = meter.finish()
        recompiled = workload.compiled_frames() - compiled
        if recompiled and r:  # the first repeat's come from its warm-up steps' shapes; later ones should not
            ctx.info["recompiles_in_timed_repeats"] = ctx.info.get("recompiles_in_timed_repeats", 0) + recompiled
        if meter.window is not None:
            windows.append(meter.window)
        if meter.blank_reason:  # the table's '-' says why (workload.min_timed_steps / min_timed_s)
            ctx.info["images_per_sec_blank"] = meter.blank_reason
        ranks.barrier()  # all ranks done with this repeat
        log(spec, f"repeat {r + 1}/{spec.repeats}: {metrics['steps']:.0f} steps in {metrics['train_time_s']:.2f} s")
        metrics.update(workload.evaluate())
        metrics.update(workload.device_memory())
        runs.append(metrics)
    t_train_end = time.time()
    metrics = aggregate_repeats(runs)
    metrics["setup_time_s"] = setup
    metrics["wall_time_s"] = time.time() - t_proc_start
    return GuestResult(spec.guest_id, "ok", metrics=metrics, info=ctx.info, t_train_start=t_train_start,
                       t_train_end=t_train_end, repeats=runs if spec.repeats > 1 else [], windows=windows)


def listen_for_stop() -> threading.Event:
    """Set once the runner's ``stop`` line arrives on stdin (an open-ended run: the guests beside it finished)."""
    stop = threading.Event()

    def read() -> None:
        for line in sys.stdin:
            if line.strip() == STOP:
                stop.set()
                return

    threading.Thread(target=read, name="stop-listener", daemon=True).start()
    return stop


class DeviceFallback(RuntimeError):
    """The guest was given a GPU and its workload settled on the CPU."""


def check_device(spec: GuestSpec, info: JsonObject, cfg: Any) -> None:
    """A guest told to use a GPU must train on one: a silent CPU run would be recorded as the profile's figure.
    With ``workload.allow_cpu_fallback=true`` it runs on, and the device it used labels it ``not enforced``."""
    if not spec.gpus or info.get("device") != "cpu" or not hasattr(cfg, "allow_cpu_fallback"):
        return
    given = f"profile {spec.profile} gives this guest GPU {','.join(spec.gpus)}"
    if cfg.allow_cpu_fallback:
        info["device_fallback"] = f"{given}; trained on cpu (workload.allow_cpu_fallback=true)"
        log(spec, f"warning: {info['device_fallback']}")
        return
    raise DeviceFallback(f"{given}, but {spec.workload} fell back to device cpu (no usable CUDA device in the "
                         "guest); workload.allow_cpu_fallback=true records such a run as not enforced")


def log(spec: GuestSpec, message: str) -> None:
    """A line in the guest's log (its stderr), with the pid for whoever inspects it."""
    print(f"[guest {spec.guest_id} pid {os.getpid()}] {message}", file=sys.stderr, flush=True)


# torch's advice after an out-of-memory, about its allocator's fragmentation: beside a profile's cap it misleads
TORCH_OOM_ADVICE = " If reserved but unallocated memory is large"


def failure_text(exc: BaseException, spec: GuestSpec | None = None) -> str:
    """One line for the runner; the traceback goes to the guest log. Past its framebuffer, the line names the cap
    first: torch's own text goes on to say how much of the whole GPU is free (139 GiB of an H200's, for an M60-1Q
    guest refused at its 1024 MiB)."""
    name = type(exc).__name__
    text = first_line(exc, 10_000) if str(exc).strip() else ""
    # torch's OutOfMemoryError (over set_per_process_memory_fraction, or the MPS pinned limit: "out of memory"),
    # TensorFlow's ResourceExhaustedError ("OOM when allocating" over its logical device's memory_limit)
    if "OutOfMemory" in name or "ResourceExhausted" in name or "out of memory" in text.lower():
        cap = f" ({spec.profile}: {spec.framebuffer_MiB} MiB, CUDA context included)" if spec and \
            spec.framebuffer_MiB else ""
        return f"framebuffer cap exceeded{cap}: {text.split(TORCH_OOM_ADVICE)[0].strip()}"
    return f"{name}: {text}" if text else name
