"""What sampling costs: ``python -m gpu_probe.selfmeasure_sampler`` (``make bench-sampler``).

Runs our Sampler at 1, 10 and 50 Hz while it follows N idle guest-like
process trees, then MLflow's built-in system-metrics monitor on the same
machine (its default 10 s interval, and 1 s), and prints achieved rate and
CPU cost (thread CPU time from the kernel, 100 % = one core) side by side.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import psutil

from gpu_probe.sampler import Sampler

# A guest stand-in: a parent with two children, all asleep (the tree walk is what costs).
GUEST = ("import subprocess, sys, time\n"
         "kids = [subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)']) for _ in range(2)]\n"
         "time.sleep(600)\n")


def thread_cpu_s(thread: threading.Thread) -> float:
    for t in psutil.Process().threads():
        if t.id == thread.native_id:
            return t.user_time + t.system_time
    return 0.0


def ours(rate_hz: float, seconds: float, guests: list[subprocess.Popen]) -> dict[str, object]:
    sampler = Sampler(rate_hz)
    with sampler:
        for i, g in enumerate(guests):
            sampler.watch(f"g{i}", g.pid)
        assert sampler._thread is not None
        c0 = thread_cpu_s(sampler._thread)
        time.sleep(seconds)
        cpu = thread_cpu_s(sampler._thread) - c0
    n = len(sampler.rows)
    return {"monitor": "gpu_probe.Sampler", "requested_hz": rate_hz, "achieved_hz": sampler.achieved_rate_hz,
            "samples": n, "cpu_pct": 100 * cpu / seconds, "ms_per_sample": 1000 * cpu / max(n, 1),
            "self_reported_cpu_pct": sampler.cpu_pct}


def mlflow_monitor(interval_s: float, seconds: float) -> dict[str, object]:
    import mlflow
    from mlflow.system_metrics.system_metrics_monitor import SystemMetricsMonitor

    with tempfile.TemporaryDirectory() as tmp:
        uri = f"sqlite:///{Path(tmp) / 'mlflow.db'}"
        client = mlflow.MlflowClient(uri)
        exp = client.create_experiment("sampler-cost", artifact_location=Path(tmp).as_uri())
        run = client.create_run(exp)
        monitor = SystemMetricsMonitor(run.info.run_id, sampling_interval=interval_s, tracking_uri=uri)
        monitor.start()
        thread = monitor._process
        c0 = thread_cpu_s(thread)
        time.sleep(seconds)
        cpu = thread_cpu_s(thread) - c0
        monitor.finish()
        history = client.get_metric_history(run.info.run_id, "system/cpu_utilization_percentage")
        client.set_terminated(run.info.run_id)
    n = len(history)
    return {"monitor": "mlflow SystemMetricsMonitor", "requested_hz": 1 / interval_s,
            "achieved_hz": n / seconds, "samples": n, "cpu_pct": 100 * cpu / seconds,
            "ms_per_sample": 1000 * cpu / max(n, 1), "self_reported_cpu_pct": float("nan")}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m gpu_probe.selfmeasure_sampler", description=__doc__)
    parser.add_argument("--seconds", type=float, default=10.0, help="window per measurement")
    parser.add_argument("--guests", type=int, default=4, help="guest process trees to follow")
    parser.add_argument("--skip-mlflow", action="store_true")
    args = parser.parse_args(argv)
    from rich.console import Console
    from rich.table import Table

    guests = [subprocess.Popen([sys.executable, "-c", GUEST]) for _ in range(args.guests)]
    rows = []
    try:
        time.sleep(1.0)  # let the trees spawn
        rows += [ours(hz, args.seconds, guests) for hz in (1.0, 10.0, 50.0)]
        if not args.skip_mlflow:
            rows.append(mlflow_monitor(1.0, args.seconds))
            rows.append(mlflow_monitor(10.0, max(args.seconds, 30.0)))
    finally:
        for g in guests:
            for p in [*psutil.Process(g.pid).children(recursive=True), psutil.Process(g.pid)]:
                p.kill()
            g.wait()
    table = Table(title=f"sampler cost, {args.guests} guest trees followed, {psutil.cpu_count()} cores")
    for col in ("monitor", "requested Hz", "achieved Hz", "samples", "CPU % of one core", "ms CPU / sample",
                "self-reported CPU %"):
        table.add_column(col, justify="left" if col == "monitor" else "right")
    for r in rows:
        table.add_row(str(r["monitor"]), f"{r['requested_hz']:g}", f"{r['achieved_hz']:.2f}", str(r["samples"]),
                      f"{r['cpu_pct']:.2f}", f"{r['ms_per_sample']:.2f}", f"{r['self_reported_cpu_pct']:.2f}")
    Console(width=120).print(table)
    ten = next(r for r in rows if r["monitor"] == "gpu_probe.Sampler" and r["requested_hz"] == 10.0)
    verdict = "meets" if ten["cpu_pct"] <= 1.0 else "MISSES"
    print(f"goal at 10 Hz: <= 1% of one core -> {ten['cpu_pct']:.2f}% ({verdict})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
