"""launcher=slurm for real: sweep jobs submitted with sbatch to a Slurm cluster started on this host.

The cluster (tests/support/slurmcluster.py) is Debian's slurmctld, slurmd and slurmdbd
with munge and MariaDB, on loopback, with one node that has this host's cores
and memory. ``make setup-cluster`` installs them; the tests are skipped only
where apt-get is not there to do so, or where they do not run as root (the daemons run as root).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from suites.backends.leftovers import STATE_ENV
from suites.poll import wait_until
from tests.support.helpers import REPO, SMOKE, all_runs, cpu_burner, store_at, training, wait_while_running
from tests.support.slurmcluster import PARTITION, SlurmCluster, missing_tools


@pytest.fixture(scope="module")
def slurm():
    missing = missing_tools()
    if missing and shutil.which("apt-get") is None:
        pytest.skip(f"no apt-get here to install Slurm ({', '.join(missing)} missing)")
    assert not missing, f"{', '.join(missing)} missing: make setup-cluster installs them"
    if os.geteuid() != 0:
        pytest.skip("the test cluster runs its daemons as root (SlurmUser=root)")
    cluster = SlurmCluster().start()
    yield cluster
    cluster.stop()
    time.sleep(0.5)
    left = [p for p in cluster.leftovers() if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
    assert not left, f"left running: {left}"
    listening = subprocess.run(["ss", "-Htln"], capture_output=True, text=True, check=True).stdout
    assert not [port for port in cluster.ports.values() if f":{port} " in listening]
    assert not cluster.dir.exists()


def sweep(tmp_path: Path, slurm: SlurmCluster, profiles: str, *args: str) -> list[str]:
    """The make command line of a sweep through the Slurm launcher into tmp's own store."""
    extra = " ".join([*SMOKE, f"tracking_uri={store_at(tmp_path / 'mlflow.db')}", f"artifact_dir={tmp_path / 'art'}",
                      f"hydra.sweep.dir={tmp_path / 'sweep'}", f"hydra.launcher.partition={PARTITION}",
                      "hydra.launcher.timeout_min=10", f"data.cache_dir={tmp_path / 'data'}", *args])
    return ["make", "-s", "bench", "-m", "multirun=1", f"profile={profiles}", "launcher=slurm", f"ARGS={extra}"]


def job_ids(tmp_path: Path) -> list[str]:
    """The sweep's Slurm jobs, as submitit filed them: an array task per sweep point ("7_0", "7_1"), or one job
    ("8") for a sweep of one point."""
    return sorted(d.name for d in (tmp_path / "sweep" / ".submitit").iterdir()
                  if re.fullmatch(r"\d+(_\d+)?", d.name) and (d / f"{d.name}_submitted.pkl").exists())


def cancelled(tmp_path: Path, slurm: SlurmCluster, launcher: subprocess.Popen, state: Path) -> None:
    log = tmp_path / "sweep" / "0" / "g0.log"
    wait_while_running(launcher, lambda: training(log.parent, "g0"), 300, "the job's guest should be running")
    [job] = job_ids(tmp_path)
    assert guests_of(state), "the job's guest runs with this test's BENCH_STATE_DIR"
    slurm.run("scancel", job)
    out, _ = launcher.communicate(timeout=300)
    assert launcher.returncode != 0  # the sweep lost a job and says so
    results = json.loads((tmp_path / "sweep" / "0" / "results.json").read_text())
    assert results["status"] == "interrupted", out[-2000:]
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    # Slurm's SIGKILL after KillWait may land before the runner has written the store (a busy host): then the next
    # command on the store records it from the run directory (suites/record/owed.py).
    synced = subprocess.run([sys.executable, "-m", "suites", "sync", "--to", uri], cwd=REPO, capture_output=True,
                            text=True, timeout=300, env={**slurm.env, STATE_ENV: str(state)})
    assert synced.returncode == 0, synced.stderr[-2000:]
    runs = all_runs(uri)
    scenario, guests = (runs[runs["tags.bench.role"] == role] for role in ("scenario", "guest"))
    assert len(scenario) == 1 and scenario.iloc[0]["status"] == "KILLED", synced.stdout
    assert "interrupted (SIGTERM)" in scenario.iloc[0]["tags.bench.failure"]
    assert list(guests["status"]) == ["KILLED"], synced.stdout
    assert wait_until(lambda: slurm.sacct([job]).get(job) == "CANCELLED by 0", 60, 1), slurm.sacct([job])
    assert not guests_of(state), "a guest of the cancelled job outlived it"
    assert os.path.exists(tmp_path / "sweep" / "0" / "samples.csv")


def guests_of(state: Path) -> list[psutil.Process]:
    """The guest processes this test started, through Slurm too (a job runs in the environment it was submitted
    from): those whose BENCH_STATE_DIR is the test's own; another test's guests running meanwhile are not its."""
    out = []
    for p in psutil.process_iter(["cmdline"]):
        try:
            if "suites.guest" in (p.info["cmdline"] or []) and p.environ().get(STATE_ENV) == str(state):
                out.append(p)
        except psutil.Error:  # ended meanwhile, or not ours to read
            continue
    return out


def test_a_sweep_runs_as_slurm_jobs_and_reaches_the_store(tmp_path: Path, slurm: SlurmCluster):
    proc = subprocess.run(sweep(tmp_path, slurm, "m60-1q,m60-8q"), cwd=REPO, capture_output=True, text=True,
                          timeout=600, env=slurm.env)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    ids = job_ids(tmp_path)
    assert len(ids) == 2, ids
    # the accounting record follows the job's end by a moment
    assert wait_until(lambda: set(slurm.sacct(ids).values()) == {"COMPLETED"}, 60, 1), slurm.sacct(ids)
    runs = all_runs(f"sqlite:///{tmp_path / 'mlflow.db'}")
    scenarios = runs[runs["tags.bench.role"] == "scenario"]
    assert sorted(scenarios["params.profile"]) == ["m60-1q", "m60-8q"]
    assert set(scenarios["tags.bench.launcher"]) == {"slurm"} and set(scenarios["status"]) == {"FINISHED"}


def test_a_job_cancelled_with_scancel_is_recorded_as_interrupted(tmp_path: Path, slurm: SlurmCluster, own_state: Path):
    """On a host kept busy by other work (this test's CPU burner), as a person running `make size` beside it: the
    record still reaches the store, by the runner itself or by the next command on the store."""
    with cpu_burner():
        job_cancelled(tmp_path, slurm, own_state)


def job_cancelled(tmp_path: Path, slurm: SlurmCluster, own_state: Path) -> None:
    launcher = subprocess.Popen(sweep(tmp_path, slurm, "m60-8q", "workload=idle", "workload.seconds=600"),
                                cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                env={**slurm.env, STATE_ENV: str(own_state)}, start_new_session=True)
    try:
        cancelled(tmp_path, slurm, launcher, own_state)
    finally:  # whatever happened, no launcher (and no guest of its) outlives the test
        if launcher.poll() is None:
            os.killpg(launcher.pid, signal.SIGKILL)
            launcher.wait(timeout=30)
