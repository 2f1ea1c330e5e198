"""``make bench-ml``: images/s per workload, in a guest vs a bare loop in this process.

For each workload the suite runs one guest through the real CLI (its own
process, barrier, sampler, MLflow), then the same model, data, batch size and
step count run as a plain loop with no harness at all, in one fresh process
given the guest's cores and thread settings. The ratio says what the suite's
machinery costs (goal >= 0.97).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from suites.guest.protocol import GuestSpec
from suites.guest.setup import apply_resources, environment
from suites.workloads import workload_class
from suites.workloads.base import GuestContext

REPO = Path(__file__).resolve().parents[2]
# Sizes that take seconds on a 2-core CPU; on a GPU pass bigger ones with --set.
DEFAULTS = {
    "mnist-torch": ["data.synthetic_train=12800", "workload.train_limit=12800", "workload.warmup_steps=10"],
    "cifar10-torch": ["workload.width=16", "workload.batch_size=256", "workload.train_limit=10240",
                      "data.synthetic_train=10240",
                      "workload.epochs=1", "workload.warmup_steps=3", "workload.lr=0.02"],
    "mnist-tf": ["data.synthetic_train=12800", "workload.train_limit=12800", "workload.warmup_steps=10"],
    "cifar10-tf": ["workload.width=16", "workload.batch_size=256", "workload.train_limit=10240",
                   "data.synthetic_train=10240",
                   "workload.epochs=1", "workload.warmup_steps=3"],
}


def in_guest(workload: str, overrides: list[str], tmp: Path) -> dict[str, Any]:
    run_dir = tmp / workload
    cmd = [sys.executable, "-m", "suites.app.bench", f"workload={workload}", "progress=quiet", *overrides,
           f"tracking_uri=sqlite:///{tmp / 'mlflow.db'}", f"artifact_dir={tmp / 'artifacts'}",
           f"data.cache_dir={tmp / 'data'}", f"hydra.run.dir={run_dir}"]
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"error: {workload} in a guest failed: {proc.stderr.strip().splitlines()[-1:]}")
    results = json.loads((run_dir / "results.json").read_text())
    g = results["guests"][0]
    return {"metrics": g["result"]["metrics"], "spec": g["spec"]}


def bare_process(workload: str, spec: dict[str, Any], tmp: Path) -> float:
    """Run :func:`bare_loop` in a fresh interpreter (no other framework loaded, same cores)."""
    path = tmp / f"{workload}-spec.json"
    path.write_text(json.dumps(spec))
    # the guest's environment (threads, GPUs) from the start, as the runner gives a guest
    proc = subprocess.run([sys.executable, "-m", "suites.app.bench_ml", "--bare", workload, str(path)], cwd=REPO,
                          capture_output=True, text=True, env={**os.environ, **environment(GuestSpec(**spec))})
    if proc.returncode != 0:
        raise SystemExit(f"error: bare {workload} failed: {proc.stderr.strip().splitlines()[-1:]}")
    return float(proc.stdout.strip().splitlines()[-1])


def bare_loop(workload: str, spec: dict[str, Any]) -> float:
    """The same training with nothing around it: images/s after the same warm-up."""
    apply_resources(GuestSpec(**spec))  # the guest's cores, as a guest pins them
    plugin = workload_class(workload)
    cfg = plugin.config_cls(**spec["workload_config"])
    wl = plugin(cfg, GuestContext("bare", spec["vcpus"], spec["gpus"], None, spec["data"], spec["seed"]))
    wl.prepare()
    return bare_torch(wl, cfg) if plugin.process_ranks else bare_keras(wl, cfg)


def bare_keras(wl: Any, cfg: Any) -> float:
    """model.fit with only a clock at the warm-up boundary (the suite's callback also meters every step)."""
    import keras

    marks: dict[str, float] = {}

    class Clock(keras.callbacks.Callback):
        def on_train_batch_end(self, batch: int, logs: Any = None) -> None:
            if batch + 1 == cfg.warmup_steps:
                marks["warm"] = time.perf_counter()

    wl.model.fit(wl.train_ds, epochs=cfg.epochs, verbose=0, shuffle=False, callbacks=[Clock()])
    images = len(wl.x_train) * cfg.epochs - cfg.warmup_steps * cfg.batch_size
    return images / (time.perf_counter() - marks["warm"])


def bare_torch(wl: Any, cfg: Any) -> float:
    import torch
    import torch.nn.functional as F

    x, y, bs, total = wl.x_train, wl.y_train, cfg.batch_size, wl.total_steps()
    gen = torch.Generator(device=wl.device).manual_seed(0)
    sync = torch.cuda.synchronize if wl.device.type == "cuda" else (lambda: None)
    smoothing = getattr(cfg, "label_smoothing", 0.0)
    images, step, t_warm = 0, 0, time.perf_counter()
    while step < total:
        order = torch.randperm(len(x), generator=gen, device=wl.device)
        for i in range(0, len(x), bs):
            idx = order[i : i + bs]
            with wl.autocast():
                loss = F.cross_entropy(wl.model(wl.augment(x[idx], gen)).float(), y[idx], label_smoothing=smoothing)
            wl.opt.zero_grad(set_to_none=True)
            loss.backward()
            wl.opt.step()
            wl.sched.step()
            step += 1
            if step == cfg.warmup_steps:
                sync()
                t_warm = time.perf_counter()
            elif step > cfg.warmup_steps:
                images += len(idx)
            if step >= total:
                break
    sync()
    return images / (time.perf_counter() - t_warm)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--workloads", nargs="+", default=list(DEFAULTS))
    parser.add_argument("--set", nargs="*", default=None, help="Hydra overrides replacing the CPU-sized defaults")
    parser.add_argument("--rounds", type=int, default=3, help="alternate guest and bare runs; medians are compared")
    parser.add_argument("--bare", nargs=2, metavar=("WORKLOAD", "SPEC_JSON"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.bare:  # the child side of bare_process
        print(bare_loop(args.bare[0], json.loads(Path(args.bare[1]).read_text())))
        return 0
    table = Table(title=f"in-guest vs bare-loop training throughput (medians of {args.rounds} alternating rounds)")
    for col in ("workload", "device", "steps", "suite images/s", "bare images/s", "ratio", "goal >= 0.97"):
        table.add_column(col, justify="left" if col in ("workload", "device") else "right")
    with tempfile.TemporaryDirectory() as tmp:
        for workload in args.workloads:
            overrides = args.set if args.set is not None else DEFAULTS.get(workload, [])
            suite_rates, bare_rates = [], []
            for _ in range(args.rounds):
                suite = in_guest(workload, overrides, Path(tmp))
                suite_rates.append(suite["metrics"]["images_per_sec"])
                bare_rates.append(bare_process(workload, suite["spec"], Path(tmp)))
            rate, bare = statistics.median(suite_rates), statistics.median(bare_rates)
            ratio = rate / bare
            device = "GPU" if suite["spec"]["gpus"] else "CPU"
            table.add_row(workload, device, f"{suite['metrics']['steps']:.0f}", f"{rate:,.0f}", f"{bare:,.0f}",
                          f"{ratio:.3f}", "yes" if ratio >= 0.97 else "NO")
    Console(width=140).print(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
