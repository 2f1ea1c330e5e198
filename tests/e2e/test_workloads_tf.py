"""The Keras workloads, trained for real in guests (TensorFlow CPU here)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.helpers import HAVE_MNIST, MNIST_ROOT, run_bench

TINY = ["progress=quiet", "data.synthetic_train=1000", "data.synthetic_test=300", "workload.width=8"]


def guest_result(tmp_path: Path, *overrides: str) -> dict:
    run = run_bench(tmp_path, *TINY, *overrides)
    assert run.proc.returncode == 0, run.proc.stderr[-2000:]
    return run.results["guests"][0]["result"]


def test_mnist_tf_learns_synthetic_digits(tmp_path: Path):
    r = guest_result(tmp_path, "workload=mnist-tf", "profile.vcpus=1", "workload.epochs=5", "workload.batch_size=100",
                     "workload.size_by=work")
    m = r["metrics"]
    assert m["test_accuracy"] > 0.8 and m["steps"] == 50 and m["images"] == 5000
    assert r["info"]["precision"] == "float32" and r["info"]["framebuffer_cap"] == "not applied (no GPU)"
    assert r["info"]["replicas"] == 1


def test_cifar10_tf_learns_synthetic_classes_and_stops_at_its_target(tmp_path: Path):
    r = guest_result(tmp_path, "workload=cifar10-tf", "workload.epochs=3", "workload.batch_size=100",
                     "workload.target_accuracy=0.3", "workload.eval_each_epoch=true",
                     "workload.warmup_steps=2", "workload.min_timed_steps=5", "workload.min_timed_s=0")
    m = r["metrics"]
    assert m["test_accuracy"] >= 0.3 and 0 < m["time_to_accuracy_s"] <= m["train_time_s"] + 1e-6
    assert m["steps"] in (10, 20, 30) and m["images_per_sec"] > 0


@pytest.mark.slow
@pytest.mark.skipif(not HAVE_MNIST, reason=f"real MNIST not found under {MNIST_ROOT} (set BENCH_TEST_MNIST_ROOT)")
def test_real_mnist_tf_reaches_99_percent(tmp_path: Path):
    run = run_bench(tmp_path, "workload=mnist-tf", f"data.root={MNIST_ROOT}", "progress=quiet")
    assert run.proc.returncode == 0, run.proc.stderr[-2000:]
    m = run.results["guests"][0]["result"]["metrics"]
    assert m["test_accuracy"] >= 0.99 and m["images"] == 60000 // 512 * 512  # whole batches only


def test_a_diverged_keras_run_is_a_failure_with_its_reason(tmp_path: Path):
    run = run_bench(tmp_path, *TINY, "workload=mnist-tf", "profile.vcpus=1", "workload.lr=1e30", "workload.epochs=1",
                    "workload.batch_size=100")
    assert run.proc.returncode == 1, run.proc.stderr[-2000:]
    result = run.results["guests"][0]["result"]
    assert result["status"] == "failed" and "training diverged: loss nan" in result["error"], result["error"]
    assert "precision float32" in result["error"]  # what it trained in is said (mixed_float16 on a GPU)
