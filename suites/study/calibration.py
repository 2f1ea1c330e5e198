"""The study planned from measurement: one short timed probe per workload on this host, cached.

A probe is one run of the real bench command (scenario single, one repeat, the study's tier): its whole wall time
(process start, set-up, training, recording) is what one phase run of that workload costs here, the figure the
planner (:mod:`suites.study.planner`) sums. The figures are kept in ``<study.out_dir>/calibration.json`` under
this host's fingerprint (name, CPU, cores, GPUs), so the next study on the same host and device plans from them
without probing; ``--plan`` never probes (it reads the cache). A probe that fails is said, and the planner's
table stands in for it.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from gpu_probe.inventory import Inventory
from suites.record.rundir import write_atomic

CACHE = "calibration.json"
REPO = Path(__file__).resolve().parents[2]


def fingerprint(inv: Inventory) -> str:
    """This host and device, as the cache keys them: a figure from another machine never plans this one."""
    gpus = "+".join(str(g.get("name", "?")) for g in inv.gpus) or "no GPU"
    return f"{inv.hostname} | {inv.cpu_model} | {inv.cpus_usable} cores | {gpus}"


def cached(out_dir: Path, inv: Inventory) -> dict[tuple[str, str], float]:
    """(workload, tier) -> seconds this host's probes measured before ({} where none)."""
    try:
        raw = json.loads((out_dir / CACHE).read_text()).get(fingerprint(inv), {})
    except (OSError, ValueError, AttributeError):
        return {}
    return {tuple(k.split("/", 1)): float(v) for k, v in raw.items()  # type: ignore[misc]
            if "/" in k and isinstance(v, (int, float)) and v > 0}


def probe(workloads: list[str], tier: str, overrides: list[str], out_dir: Path, inv: Inventory,
          say: Callable[[str], None]) -> dict[tuple[str, str], float]:
    """Every cached figure, and a probe of each of ``workloads`` at ``tier`` not yet cached (saved as it comes)."""
    known = cached(out_dir, inv)
    for workload in workloads:
        if (workload, tier) in known:
            continue
        say(f"study: probing {workload} ({tier} sizes) once on this host, for the plan")
        seconds, why = timed_run(workload, tier, overrides)
        if seconds is None:
            say(f"study: the {workload} probe failed ({why}): the planner's table stands in for it")
            continue
        known[(workload, tier)] = seconds
        save(out_dir, inv, known)
    return known


def timed_run(workload: str, tier: str, overrides: list[str]) -> tuple[float | None, str]:
    """(wall seconds of one bench run of ``workload`` at ``tier``, '') or (None, why), into a folder of its own."""
    with tempfile.TemporaryDirectory(prefix="study-probe-") as tmp:
        argv = [sys.executable, "-m", "suites", "bench", *overrides, "scenario=single", f"workload={workload}",
                *(["+preset=smoke"] if tier == "smoke" else []), "scenario.repeats=1", "progress=quiet",
                f"tracking_uri=sqlite:///{tmp}/mlflow.db", f"artifact_dir={tmp}/artifacts", f"hydra.run.dir={tmp}/run"]
        t0 = time.monotonic()
        proc = subprocess.run(argv, cwd=REPO, capture_output=True, text=True)
        seconds = time.monotonic() - t0
    if proc.returncode != 0:
        lines = proc.stderr.strip().splitlines() or proc.stdout.strip().splitlines() or [f"exit {proc.returncode}"]
        return None, lines[-1][:200]
    return round(seconds, 1), ""


def save(out_dir: Path, inv: Inventory, known: dict[tuple[str, str], float]) -> None:
    try:
        everything = json.loads((out_dir / CACHE).read_text())
        everything = everything if isinstance(everything, dict) else {}
    except (OSError, ValueError):
        everything = {}
    everything[fingerprint(inv)] = {f"{w}/{t}": s for (w, t), s in sorted(known.items())}
    out_dir.mkdir(parents=True, exist_ok=True)
    write_atomic(out_dir / CACHE, json.dumps(everything, indent=2))
