"""What a phase run costs, below every campaign (the study's and the sizing's planners read it): the planner's table
(:data:`OVERHEAD_S`, :data:`WORK_S`) and one short timed trial run per workload on this host, cached.

A trial run is one run of the real bench command (scenario single, one repeat, the study's tier): its whole wall time
(process start, set-up, training, recording) is what one phase run of that workload costs here, the figure the
planner (:mod:`suites.study.plan`) sums. The figures are kept in ``<study.out_dir>/trials.json`` under
this host's fingerprint (name, CPU, cores, GPUs), so the next study on the same host and device plans from them
without trial runs; ``--plan`` never runs one (it reads the cache). A trial run that fails is said, and the planner's
table stands in for it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

from gpu_probe.inventory import Inventory
from suites.record.rundir import write_atomic

# Seconds the budget is planned with where nothing was measured: what the harness costs around the work, then each
# workload's training at a tier. What a study measures comes first: the trial runs on this host (below: one timed
# run per workload, whole, cached per host and device), then ``make gpu-check``'s GPU seconds
# (study.timings=<its summary.json>); these figures only fill what neither has (CPU: this project's 2-core machines;
# GPU: 7.7 s of a whole run's overhead measured on an H200, the work rough guesses).
# A comparison pays its command's start once (the process, its imports, the store, the first guest's set-up), then
# each phase run its cost per repeat: its guest is forked from the comparison's preloaded process (issue 88; make
# bench-harness: 0.1-0.4 s median on a 2-core host; a GPU guest starts CUDA after its fork). OVERHEAD_S is a whole
# run's (a trial run: the start and one phase run), what a sizing plans each phase run at.
START_S = {"cpu": 6.0, "gpu": 6.5}
REPEAT_S = {"cpu": 1.0, "gpu": 1.5}
OVERHEAD_S = {k: START_S[k] + REPEAT_S[k] for k in START_S}
WORK_S = {  # (workload, tier) -> {device: seconds}
    # the record's recipe (issue 31): MNIST 1 epoch, 23 s on 2 cores with real MNIST; CIFAR-10 9.9 epochs at ~265
    # images/s on 2 cores (the default 6,000 synthetic images), ~3 s on one A100 for the real 50,000 (airbench94)
    ("mnist-torch", "smoke"): {"cpu": 2, "gpu": 1}, ("mnist-torch", "full"): {"cpu": 30, "gpu": 3},
    ("mnist-tf", "smoke"): {"cpu": 6, "gpu": 4}, ("mnist-tf", "full"): {"cpu": 35, "gpu": 8},
    ("cifar10-torch", "smoke"): {"cpu": 15, "gpu": 3}, ("cifar10-torch", "full"): {"cpu": 220, "gpu": 6},
    ("graphics-replay", "smoke"): {"cpu": 3, "gpu": 1}, ("graphics-replay", "full"): {"cpu": 10, "gpu": 3},
}

CACHE = "trials.json"
OLD_CACHE = "calibration.json"  # its name before issue 64 (the study's "calibration"): still read
REPO = Path(__file__).resolve().parents[2]


def fingerprint(inv: Inventory) -> str:
    """This host and device, as the cache keys them: a figure from another machine never plans this one."""
    gpus = "+".join(str(g.get("name", "?")) for g in inv.gpus) or "no GPU"
    return f"{inv.hostname} | {inv.cpu_model} | {inv.cpus_usable} cores | {gpus}"


MAX_TRIAL_S = 86400.0  # a cached timing beyond a day is no trial run of a phase (1e300 would plan a 300-digit study)


def cached_trials(out_dir: Path, inv: Inventory) -> dict[tuple[str, str], float]:
    """(workload, tier) -> seconds this host's trial runs measured before ({} where none)."""
    try:
        raw = json.loads(readable(out_dir).read_text()).get(fingerprint(inv), {})
    except (OSError, ValueError, AttributeError):
        return {}
    if not isinstance(raw, dict):  # a cache written by hand or by another version: data, never a traceback
        return {}
    return {tuple(k.split("/", 1)): float(v) for k, v in raw.items()  # type: ignore[misc]
            if isinstance(k, str) and "/" in k and isinstance(v, (int, float)) and not isinstance(v, bool)
            and 0 < v <= MAX_TRIAL_S}


# A trial run may take at most this share of study.budget_s: one that hangs (a GPU that never answers, a data set on a
# dead mount) is stopped, and the study plans from the table instead of losing its budget to it.
TRIAL_SHARE = 0.25
STOP_GRACE_S = 20.0  # after SIGTERM: how long a command's runner (a trial run's, a check's) has to stop and record


def time_trials(workloads: list[str], tier: str, overrides: list[str], out_dir: Path, inv: Inventory,
              say: Callable[[str], None], timeout_s: float = 600.0) -> dict[tuple[str, str], float]:
    """Every cached figure, and a trial run of each of ``workloads`` at ``tier`` not yet cached (saved as it comes),
    each stopped after ``timeout_s``; ``say`` prefixes each line with its command's name."""
    known = cached_trials(out_dir, inv)
    for workload in workloads:
        if (workload, tier) in known:
            continue
        say(f"a trial run of {workload} ({tier} sizes), once on this host, for the plan (at most "
            f"{timeout_s:.0f} s)")
        seconds, why = timed_run(workload, tier, overrides, timeout_s)
        if seconds is None:
            say(f"the {workload} trial run failed ({why}): the planner's table stands in for it")
            continue
        known[(workload, tier)] = seconds
        save(out_dir, inv, known)
    return known


def timed_run(workload: str, tier: str, overrides: list[str], timeout_s: float) -> tuple[float | None, str]:
    """(wall seconds of one bench run of ``workload`` at ``tier``, '') or (None, why), into a folder of its own;
    past ``timeout_s`` the run is stopped (SIGTERM to its process group: its runner stops its guests) and why says
    so."""
    with tempfile.TemporaryDirectory(prefix="study-trial-") as tmp:
        argv = [sys.executable, "-m", "suites", "bench", *overrides, "scenario=single", f"workload={workload}",
                *(["+preset=smoke"] if tier == "smoke" else []), "scenario.repeats=1", "progress=quiet",
                f"tracking_uri=sqlite:///{tmp}/mlflow.db", f"artifact_dir={tmp}/artifacts", f"hydra.run.dir={tmp}/run"]
        t0 = time.monotonic()
        proc, deferred = started(argv)
        try:
            for signum in deferred:  # one that came while it started: delivered now, where it is stopped
                signal.raise_signal(signum)
            out, err = proc.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            stop_group(proc)
            return None, f"stopped after {timeout_s:.0f} s ({TRIAL_SHARE:.0%} of the command's budget_s)"
        except BaseException:  # Ctrl-C or SIGTERM while it runs: its runner stops its guests, never an orphan
            stop_group(proc)
            raise
        seconds = time.monotonic() - t0
    if proc.returncode != 0:
        lines = err.strip().splitlines() or out.strip().splitlines() or [f"exit {proc.returncode}"]
        return None, lines[-1][:200]
    return round(seconds, 1), ""


def started(argv: list[str]) -> tuple[subprocess.Popen[str], list[int]]:
    """The trial run started in a session of its own, and the stop signals that came while it started: held back
    (a Ctrl-C inside Popen would leave the new process group running with nobody to stop it), for the caller to
    deliver once it can stop the group. Python-level handlers only: the child's signal mask is untouched."""
    deferred: list[int] = []
    held = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    main = threading.current_thread() is threading.main_thread()  # signals are the main thread's only
    saved = {s: signal.signal(s, lambda signum, frame: deferred.append(signum)) for s in held} if main else {}
    try:
        return subprocess.Popen(argv, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                start_new_session=True), deferred
    finally:
        for s, handler in saved.items():
            signal.signal(s, handler)


def stop_group(proc: subprocess.Popen[str]) -> tuple[str, str]:
    """A command's process group (a trial run's or a gpu-check check's runner; guests live in sessions of their own
    and are the runner's to stop): SIGTERM, then SIGKILL after STOP_GRACE_S; what it printed (nothing where it is
    gone unread)."""
    for sig, wait_s in ((signal.SIGTERM, STOP_GRACE_S), (signal.SIGKILL, 10.0)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            break
        try:
            return proc.communicate(timeout=wait_s)
        except subprocess.TimeoutExpired:
            continue
    return "", ""


def readable(out_dir: Path) -> Path:
    """The cache to read: ``trials.json``, else the one written under its old name (its figures move to the new
    file at the next save)."""
    return out_dir / OLD_CACHE if not (out_dir / CACHE).exists() and (out_dir / OLD_CACHE).exists() else out_dir / CACHE


def save(out_dir: Path, inv: Inventory, known: dict[tuple[str, str], float]) -> None:
    try:
        everything = json.loads(readable(out_dir).read_text())
        everything = everything if isinstance(everything, dict) else {}
    except (OSError, ValueError):
        everything = {}
    everything[fingerprint(inv)] = {f"{w}/{t}": s for (w, t), s in sorted(known.items())}
    out_dir.mkdir(parents=True, exist_ok=True)
    write_atomic(out_dir / CACHE, json.dumps(everything, indent=2))
