"""Shared helpers: run the real CLI in a subprocess against a private store."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
# Real MNIST for accuracy tests: BENCH_TEST_MNIST_ROOT, else the team's shared copy beside the checkout.
MNIST_ROOT = Path(os.environ.get("BENCH_TEST_MNIST_ROOT", REPO.parent / "shared" / "data"))
HAVE_MNIST = (MNIST_ROOT / "MNIST" / "raw" / "train-images-idx3-ubyte").exists()

# A seconds-long guest: small CNN, a slice of synthetic data.
SMOKE = ["+experiment=smoke", "progress=quiet"]


@dataclass
class BenchRun:
    proc: subprocess.CompletedProcess[str]
    run_dir: Path
    tracking_uri: str

    @property
    def results(self) -> dict:
        return json.loads((self.run_dir / "results.json").read_text())


def bench_args(tmp: Path, *overrides: str) -> tuple[list[str], Path, str]:
    run_dir = tmp / "run"
    uri = f"sqlite:///{tmp / 'mlflow.db'}"
    args = [sys.executable, "-m", "suites.bench", *overrides, f"tracking_uri={uri}",
            f"artifact_dir={tmp / 'artifacts'}", f"data.cache_dir={tmp / 'data'}",
            f"hydra.run.dir={run_dir}"]
    return args, run_dir, uri


def run_bench(tmp: Path, *overrides: str, timeout: float = 600) -> BenchRun:
    args, run_dir, uri = bench_args(tmp, *overrides)
    proc = subprocess.run(args, cwd=REPO, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "BENCH_DATA_ROOT": str(tmp / "no-real-data")})
    return BenchRun(proc, run_dir, uri)


@pytest.fixture
def tmp(tmp_path: Path) -> Path:
    return tmp_path
