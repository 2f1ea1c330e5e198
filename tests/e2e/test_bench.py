"""The whole product through its CLI: real guests, real training, a real MLflow store."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path

import pytest

from tests.support.helpers import (
    HAVE_MNIST,
    MNIST_ROOT,
    REPO,
    SMOKE,
    assert_gone,
    bench_args,
    mlflow_client,
    run_bench,
    runs_of,
    training,
    wait_for,
    with_fault,
)
from tests.support.runs import start_idle_pair


def start_long_pair(tmp_path: Path, epochs: int) -> tuple[subprocess.Popen, Path, str]:
    """Two guests of 16 steps an epoch (2,048 images in batches of 128), 20 ms a step: the fixed-step stand-in, whose
    steps sleep: what is tested is the runner's handling of a guest's death, not its training (two guests of real
    training for 20 epochs were ~20 s of CI's CPU)."""
    args, run_dir, uri = bench_args(tmp_path, *SMOKE, "scenario=concurrent", "workload=fixed-step",
                                  "workload.step_ms=20", "workload.images=2048", "workload.batch_size=128",
                                  f"workload.epochs={epochs}", "workload.max_steps=null", "workload.size_by=work")
    proc = subprocess.Popen(args, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "BENCH_DATA_ROOT": str(tmp_path / "none")})
    return proc, run_dir, uri


def test_two_guests_run_concurrently_on_disjoint_cpus(tmp_path: Path):
    run = run_bench(tmp_path, *SMOKE, "scenario=concurrent", "workload.size_by=work")  # the recipe's 2.5 epochs
    assert run.proc.returncode == 0, run.proc.stderr[-2000:]
    guests = [g["result"] for g in run.results["guests"]]
    assert [g["status"] for g in guests] == ["ok", "ok"]
    a, b = guests
    assert a["t_train_start"] < b["t_train_end"] and b["t_train_start"] < a["t_train_end"], "no overlap"
    assert a["affinity"] and b["affinity"] and not set(a["affinity"]) & set(b["affinity"])
    assert a["pid"] != b["pid"]
    assert all(g["metrics"]["test_accuracy"] > 0.5 for g in guests)  # learnable synthetic data, 10 classes
    assert "g0" in run.proc.stdout and "no GPU" in run.proc.stdout
    assert run.proc.stdout.count("(synthetic)") == 2, run.proc.stdout  # each accuracy cell says what it is of

    parents, children = runs_of(run.tracking_uri)
    assert len(parents) == 1 and len(children) == 2
    parent_id = parents.iloc[0]["run_id"]
    assert set(children["tags.mlflow.parentRunId"]) == {parent_id}
    assert set(children["params.guest_id"]) == {"g0", "g1"}
    assert parents.iloc[0]["params.profile.name"] == "m60-8q"
    assert parents.iloc[0]["params.host.gpu_names"] == "no GPU"
    assert parents.iloc[0]["metrics.sampler_rate_hz"] > 5
    assert (children["metrics.images_per_sec"] > 0).all() and (children["metrics.cpu_pct.mean"] > 0).all()
    client = mlflow_client(run.tracking_uri)
    names = {f.path for f in client.list_artifacts(parent_id)}
    assert {"config.yaml", "inventory.json", "results.json", "samples.csv", "utilisation.png"} <= names
    child_id = children.iloc[0]["run_id"]
    assert {f.path for f in client.list_artifacts(child_id)} & {"g0.log", "g1.log"}


@pytest.mark.slow
@pytest.mark.skipif(not HAVE_MNIST, reason=f"real MNIST not found under {MNIST_ROOT} (set BENCH_TEST_MNIST_ROOT)")
def test_real_mnist_reaches_its_99_percent_target_and_is_recorded(tmp_path: Path):
    run = run_bench(tmp_path, "profile=m60-8q", f"data.root={MNIST_ROOT}", "progress=quiet")
    assert run.proc.returncode == 0, run.proc.stderr[-2000:]
    parents, children = runs_of(run.tracking_uri)
    assert len(parents) == 1 and len(children) == 1
    child = children.iloc[0]
    assert child["metrics.test_accuracy"] >= 0.99 and child["metrics.target_met"] == 1.0
    assert child["metrics.images"] == 60000 // 512 * 512 and child["metrics.train_time_s"] > 0  # whole batches
    assert parents.iloc[0]["params.data.source"] == "real"
    assert parents.iloc[0]["tags.bench.status"] == "ok" and parents.iloc[0]["status"] == "FINISHED"


def test_sigkill_one_guest_other_finishes_and_run_is_partial(tmp_path: Path):
    proc, run_dir, uri = start_long_pair(tmp_path, epochs=20)
    wait_for(lambda: training(run_dir, "g0") and training(run_dir, "g1"))
    victim, survivor = training(run_dir, "g1"), training(run_dir, "g0")
    os.kill(victim, signal.SIGKILL)
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 1, err[-2000:]
    assert "failure: g1: killed by SIGKILL" in out
    results = json.loads((run_dir / "results.json").read_text())
    assert results["status"] == "partial"
    g0, g1 = (g["result"] for g in results["guests"])
    assert g0["status"] == "ok" and g0["metrics"]["steps"] == 320  # 20 epochs x 16 steps
    assert g1["status"] == "failed" and "SIGKILL" in g1["error"]
    parents, children = runs_of(uri)
    assert parents.iloc[0]["status"] == "FAILED" and "g1: killed by SIGKILL" in parents.iloc[0]["tags.bench.failure"]
    assert sorted(children["tags.bench.status"]) == ["failed", "ok"]
    assert_gone([victim, survivor])


@pytest.mark.parametrize("sig,reason", [(signal.SIGINT, "Ctrl-C"),
                                        (signal.SIGHUP, "SIGHUP: the terminal or ssh session hung up")])
def test_ctrl_c_stops_guests_and_records_what_was_measured(tmp_path: Path, sig: int, reason: str):
    """Ctrl-C kills each guest with that reason (the kill in run_guests' KeyboardInterrupt handler: without it the
    reason would be "no result"); SIGHUP (a dropped ssh session) does the same, naming itself (unhandled, it would
    kill the runner in half a second with nothing recorded)."""
    proc, run_dir, uri = start_idle_pair(tmp_path)
    wait_for(lambda: training(run_dir, "g0") and training(run_dir, "g1"))
    pids = [training(run_dir, "g0"), training(run_dir, "g1")]
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err[-2000:]
    assert "status: interrupted" in out
    results = json.loads((run_dir / "results.json").read_text())
    assert [g["result"]["error"] for g in results["guests"]] == [f"interrupted ({reason})"] * 2
    parents, children = runs_of(uri)
    assert parents.iloc[0]["status"] == "KILLED" and len(children) == 2
    assert (run_dir / "samples.csv").stat().st_size > 0
    assert_gone(pids)


def test_guest_over_its_memory_is_stopped_with_a_reason(tmp_path: Path):
    run = run_bench(tmp_path, *SMOKE, "profile.memory_MiB=300")  # importing torch alone takes more
    assert run.proc.returncode == 1
    result = run.results["guests"][0]["result"]
    assert result["status"] == "failed" and "guest memory exceeded" in result["error"]
    assert run.results["status"] == "failed"


def test_repeats_report_olympic_mean_and_cov(tmp_path: Path):
    run = run_bench(tmp_path, *SMOKE, "repeats=3", "workload.size_by=work")
    assert run.proc.returncode == 0, run.proc.stderr[-2000:]
    result = run.results["guests"][0]["result"]
    assert len(result["repeats"]) == 3
    rates = sorted(r["images_per_sec"] for r in result["repeats"])
    m = result["metrics"]
    assert m["images_per_sec"] == pytest.approx(rates[1])  # olympic mean of three = the middle one
    assert m["repeats"] == 3 and m["images_per_sec.cov"] >= 0 and m["steps"] == 40  # smoke: 2.5 epochs x 16
    _, children = runs_of(run.tracking_uri)
    assert children.iloc[0]["metrics.images_per_sec.cov"] == pytest.approx(m["images_per_sec.cov"])


def test_a_plot_that_cannot_be_written_is_a_warning_not_the_end(tmp_path: Path):
    """A full disk under the run directory (PIL failing on utilisation.png) must not abort everything: no table,
    nothing in MLflow, though results.json was intact. Here the plot's path is taken by a directory."""
    args, run_dir, uri = bench_args(tmp_path, *SMOKE)
    proc = subprocess.run(with_fault(args, dirs=(run_dir / "utilisation.png",)), cwd=REPO, capture_output=True,
                          text=True, timeout=600,
                          env={**os.environ, "BENCH_DATA_ROOT": str(tmp_path / "none")})
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "warning: utilisation plot not written ([Errno 21] Is a directory" in proc.stdout
    assert "status: ok" in proc.stdout and "mlflow: run" in proc.stdout  # the table and the record went on
    assert json.loads((run_dir / "results.json").read_text())["status"] == "ok"
    parents, children = runs_of(uri)
    assert len(parents) == 1 and len(children) == 1 and parents.iloc[0]["status"] == "FINISHED"
