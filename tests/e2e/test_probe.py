"""pycuda probes: a clear skip without pycuda or a GPU, kernels that compile, a guest that says why."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gpu_probe import probe
from tests.support.helpers import REPO, run_bench


def test_probe_cli_says_skipped_and_exits_zero():
    proc = subprocess.run([sys.executable, "-m", "gpu_probe", "probe"], cwd=REPO, capture_output=True, text=True,
                          timeout=120)
    out = json.loads(proc.stdout)
    assert proc.returncode == 0 and out["status"] in ("ok", "skipped")
    if out["status"] == "skipped":
        assert out["reason"]


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc (CUDA toolkit) not installed")
@pytest.mark.parametrize("arch", ["sm_75", "sm_90"])
def test_probe_kernels_compile_and_keep_their_arithmetic(tmp_path: Path, arch: str):
    src = tmp_path / "probe.cu"
    src.write_text(probe.KERNELS)
    ptx = tmp_path / "probe.ptx"
    subprocess.run(["nvcc", "--ptx", f"-arch={arch}", str(src), "-o", str(ptx)], check=True, timeout=300)
    text = ptx.read_text()
    assert {".entry noop", ".entry fma_f32", ".entry fma_f16"} <= set(re.findall(r"\.entry \w+", text))
    # The 16x unrolled 4-chain loops must survive optimisation, or the FLOP count would be a lie.
    assert len(re.findall(r"fma\.rn\.f32", text)) >= 64
    assert len(re.findall(r"fma\.rn\.f16x2", text)) >= 64


def test_cuda_probe_guest_without_gpu_is_a_recorded_failure(tmp_path: Path):
    if probe.unavailable() is None:
        pytest.skip("a GPU is here")
    run = run_bench(tmp_path, "workload=cuda-probe", "progress=quiet")
    assert run.proc.returncode == 1
    result = run.results["guests"][0]["result"]
    assert result["status"] == "failed" and "cuda-probe needs a GPU" in result["error"]
