"""Guest worker: ``python -m suites.guest`` speaks the protocol on stdin/stdout.

It applies its share of the machine (CPU affinity, thread counts, visible
GPUs) *before* any framework is imported, prepares the workload, waits at
the start barrier, then runs and reports. Its original stdout is kept for
protocol lines only; library chatter on fd 1 is sent to stderr (the log).
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import time
import traceback
from typing import Any, TextIO

from suites.guest.protocol import GO, GuestResult, GuestSpec, event

THREAD_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS",
               "TF_NUM_INTRAOP_THREADS", "TF_NUM_INTEROP_THREADS")


def protocol_stream() -> TextIO:
    """Keep a private copy of stdout for protocol lines; fd 1 becomes stderr."""
    fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = os.fdopen(1, "w", buffering=1, closefd=False)
    return os.fdopen(fd, "w", buffering=1)


def die_with_parent() -> None:
    """Linux: get SIGKILL when the runner dies, so no guest is ever orphaned."""
    parent = os.getppid()
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:  # the parent died before prctl took effect
        os._exit(1)


def apply_resources(spec: GuestSpec) -> None:
    if spec.vcpus and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, spec.vcpus)
    for var in THREAD_VARS:
        os.environ[var] = str(max(1, len(spec.vcpus)))
    # llvmpipe starts one rasteriser thread per host core unless told; a guest renders on its own vCPUs.
    os.environ["LP_NUM_THREADS"] = str(max(1, len(spec.vcpus)))
    # PCI order makes CUDA's numbering match NVML's when indices (not UUIDs) are given.
    os.environ["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID"
    os.environ["CUDA_VISIBLE_DEVICES"] = ",".join(spec.gpus)  # "" hides every GPU
    os.environ.update(spec.env)  # placement's extras (CUDA MPS share), decided runner-side


def make_workload(spec: GuestSpec, rank: int = 0, world: int = 1) -> tuple[Any, Any]:
    from suites.workloads import REGISTRY, GuestContext

    plugin = REGISTRY[spec.workload]
    cfg = plugin.config_cls(**spec.workload_config)
    ctx = GuestContext(guest_id=spec.guest_id, vcpus=spec.vcpus, gpus=spec.gpus, framebuffer_MiB=spec.framebuffer_MiB,
                       data=spec.data, seed=spec.seed, rank=rank, world_size=world)
    return plugin(cfg, ctx), cfg


def run(spec: GuestSpec, send: Any, t_proc_start: float) -> GuestResult:
    """Rank 0 (the only rank unless the workload asks for more): it alone speaks the protocol."""
    from suites.guest import ranks

    workload, cfg = make_workload(spec)
    world = ranks.world_size(cfg, spec) if workload.process_ranks else 1  # Keras replicates in-process
    workload.ctx.world_size = world  # before prepare(): it shards the data by rank
    peers: list[Any] = []
    try:
        if world > 1:
            port = ranks.free_port()
            peers = ranks.spawn_peers(spec, world, port)
            ranks.init(0, world, port, bool(spec.gpus))
            workload.ctx.info["ranks"] = world
        return train_and_report(spec, workload, cfg, send, t_proc_start)
    finally:
        ranks.shutdown()
        for p in peers:
            p.join(timeout=10)
            if p.is_alive():
                p.kill()


def train_and_report(spec: GuestSpec, workload: Any, cfg: Any, send: Any, t_proc_start: float) -> GuestResult:
    from gpu_probe.stats import aggregate_repeats
    from suites.guest import ranks
    from suites.workloads import StepMeter

    ctx = workload.ctx
    workload.prepare()
    ranks.barrier()  # every rank has prepared
    setup = time.time() - t_proc_start
    log(spec, f"ready after {setup:.1f} s, waiting at the start barrier")
    send(event("ready", setup_time_s=setup))
    command = sys.stdin.readline().strip()
    if command != GO:
        return GuestResult(spec.guest_id, "failed", error=f"aborted at the start barrier ({command or 'EOF'})")
    ranks.barrier()  # releases the other ranks
    log(spec, "training started")
    total = workload.total_steps() * spec.repeats
    runs = []
    t_train_start = time.time()
    for r in range(spec.repeats):
        if r:
            workload.build()  # fresh weights and optimizer; the data stays where it is
        done_before = r * workload.total_steps()
        meter = StepMeter(cfg.warmup_steps, total,
                          lambda done, tot, b=done_before: send(event("progress", done=b + done, total=tot)))
        meter.start()
        workload.train(meter)
        metrics = meter.finish()
        ranks.barrier()  # all ranks done with this repeat
        log(spec, f"repeat {r + 1}/{spec.repeats}: {metrics['steps']:.0f} steps in {metrics['train_time_s']:.2f} s")
        metrics.update(workload.evaluate())
        runs.append(metrics)
    t_train_end = time.time()
    metrics = aggregate_repeats(runs)
    metrics["setup_time_s"] = setup
    metrics["wall_time_s"] = time.time() - t_proc_start
    return GuestResult(spec.guest_id, "ok", metrics=metrics, info=ctx.info, t_train_start=t_train_start,
                       t_train_end=t_train_end, repeats=runs if spec.repeats > 1 else [])


def log(spec: GuestSpec, message: str) -> None:
    """A line in the guest's log (its stderr), with the pid for whoever inspects it."""
    print(f"[guest {spec.guest_id} pid {os.getpid()}] {message}", file=sys.stderr, flush=True)


def describe(exc: BaseException) -> str:
    """One line for the runner; the traceback goes to the guest log."""
    name = type(exc).__name__
    text = (str(exc).strip().splitlines() or [""])[0]
    if "OutOfMemory" in name or "out of memory" in text.lower():
        return f"out of memory past the framebuffer cap: {text}"
    return f"{name}: {text}" if text else name


def main() -> int:
    t_proc_start = _process_start_time()
    proto = protocol_stream()
    die_with_parent()

    def send(line: str) -> None:
        proto.write(line)
        proto.flush()

    try:
        spec = GuestSpec.from_line(sys.stdin.readline())
    except (ValueError, TypeError) as exc:
        send(event("error", error=f"bad guest spec: {exc}"))
        return 2
    apply_resources(spec)
    try:
        result = run(spec, send, t_proc_start)
    except Exception as exc:  # a guest reports its failure; it never hangs the runner
        traceback.print_exc()
        send(event("error", error=describe(exc)))
        return 1
    result.pid = os.getpid()
    result.affinity = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    send(event("result", result=result.as_dict()))
    return 0 if result.ok else 1


def _process_start_time() -> float:
    try:
        import psutil

        return psutil.Process().create_time()
    except Exception:
        return time.time()


if __name__ == "__main__":
    sys.exit(main())
