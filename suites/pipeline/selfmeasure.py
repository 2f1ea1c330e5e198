"""The harness measuring itself (make bench-ml, make bench-vm): one run of the real bench CLI into a throwaway
store of its own, the run's own word on why it failed, this host's cores, and the words a self-measurement's
verdict is said in."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from gpu_probe.shapes import JsonObject
from gpu_probe.stats import FASTER, NO_SPREAD, SLOWER, WITHIN_NOISE

__all__ = ["REPO", "VERDICTS", "RowFailed", "bench_run", "host_cores", "why_failed"]

REPO = Path(__file__).resolve().parents[2]
VERDICTS = {SLOWER: "overhead", WITHIN_NOISE: "within noise", FASTER: "guest faster: not like for like",
            NO_SPREAD: "no spread (n = 1)"}


class RowFailed(Exception):
    """A workload's run that failed: its row says why, and the other workloads go on."""


def why_failed(proc: subprocess.CompletedProcess[str], otherwise: str) -> str:
    """The run's own word on why: its ``error:`` line, else a guest's ``failure:`` line, else its last line (not a
    library's log line)."""
    lines = [ln.strip() for ln in (proc.stderr + "\n" + proc.stdout).splitlines() if ln.strip()]
    for mark in ("error:", "failure:"):
        said = [ln for ln in lines if ln.startswith(mark)]
        if said:
            return said[-1]
    plain = [ln for ln in proc.stderr.splitlines() if ln.strip() and " INFO " not in ln and " WARNING " not in ln]
    return plain[-1].strip() if plain else otherwise


def bench_run(name: str, overrides: list[str], tmp: Path, reads: str = "results.json") -> tuple[JsonObject, Path]:
    """One run of the real CLI into ``tmp``'s own store: (its run directory's ``reads``: results.json, or a
    comparison's harness.json; its run directory, a new one per run: a run directory is never reused)."""
    run_dir = Path(tempfile.mkdtemp(prefix=f"{name}-", dir=tmp))
    cmd = [sys.executable, "-m", "suites", "bench", "progress=quiet", *overrides,
           f"tracking_uri=sqlite:///{tmp / 'mlflow.db'}", f"artifact_dir={tmp / 'artifacts'}",
           f"data.cache_dir={tmp / 'data'}", f"hydra.run.dir={run_dir}"]
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True)
    if proc.returncode != 0 or not (run_dir / reads).is_file():
        raise RowFailed(why_failed(proc, f"the bench exited {proc.returncode}"))
    return json.loads((run_dir / reads).read_text()), run_dir


def host_cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
