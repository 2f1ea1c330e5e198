"""pycuda probes: a clear skip without pycuda or a GPU, kernels that compile, a guest that says why."""

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gpu_probe import probe

from .helpers import REPO, run_bench


def test_probe_skips_with_the_reason_when_it_cannot_run():
    reason = probe.unavailable()
    if reason is None:
        pytest.skip("pycuda and a GPU are here: the real probe runs in test_probe_on_a_real_gpu")
    result = probe.run()
    assert result == {"status": "skipped", "reason": reason}
    assert "pycuda" in reason or "no GPU" in reason


@pytest.mark.e2e
def test_probe_cli_says_skipped_and_exits_zero():
    proc = subprocess.run([sys.executable, "-m", "gpu_probe", "probe"], cwd=REPO, capture_output=True, text=True,
                          timeout=120)
    out = json.loads(proc.stdout)
    assert proc.returncode == 0 and out["status"] in ("ok", "skipped")
    if out["status"] == "skipped":
        assert out["reason"]


@pytest.mark.e2e
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


@pytest.mark.skipif(probe.unavailable() is not None, reason="needs pycuda and a GPU")
def test_probe_on_a_real_gpu():
    result = probe.run(size_MiB=64)
    m = result["metrics"]
    assert result["status"] == "ok"
    assert m["d2d_GBps"] > 10 and m["h2d_GBps"] > 1 and m["fp32_TFLOPS"] > 0.5
    assert m["fp16_TFLOPS"] > m["fp32_TFLOPS"] and 0 < m["launch_us"] < m["launch_sync_us"] * 10


@pytest.mark.e2e
def test_cuda_probe_guest_without_gpu_is_a_recorded_failure(tmp: Path):
    if probe.unavailable() is None:
        pytest.skip("a GPU is here")
    run = run_bench(tmp, "workload=cuda-probe", "progress=quiet")
    assert run.proc.returncode == 1
    result = run.results["guests"][0]["result"]
    assert result["status"] == "failed" and "cuda-probe needs a GPU" in result["error"]
