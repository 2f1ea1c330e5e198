"""Tests of ``gpu_probe/probe.py``."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from gpu_probe import probe


def fake_nvcc(folder: Path, archs: str, code: int = 0) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "nvcc"
    script.write_text(f"#!/bin/sh\necho '{archs}'\nexit {code}\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)


def test_the_probe_needs_an_nvcc_that_knows_the_gpu_and_says_so_before_compiling(tmp_path: Path,
                                                                                     monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert probe.nvcc_problem("90").startswith("nvcc not found: the probe compiles its kernels at run time")
    fake_nvcc(tmp_path / "old", "compute_50\ncompute_60\ncompute_80")
    monkeypatch.setenv("PATH", str(tmp_path / "old"))
    assert "cannot compile for this GPU (sm_90 not among its architectures)" in probe.nvcc_problem("90")
    fake_nvcc(tmp_path / "new", "compute_80\ncompute_90")
    monkeypatch.setenv("PATH", str(tmp_path / "new"))
    assert probe.nvcc_problem("90") is None


def test_probe_skips_with_the_reason_when_it_cannot_run():
    reason = probe.unavailable()
    if reason is None:
        pytest.skip("pycuda and a GPU are here: the real probe runs in test_probe_on_a_real_gpu")
    result = probe.run()
    assert result == {"status": "skipped", "reason": reason}
    assert "pycuda" in reason or "no GPU" in reason


@pytest.mark.skipif(probe.unavailable() is not None, reason="needs pycuda and a GPU")
def test_probe_on_a_real_gpu():
    result = probe.run(size_MiB=64)
    m = result["metrics"]
    assert result["status"] == "ok"
    assert m["d2d_GBps"] > 10 and m["h2d_GBps"] > 1 and m["fp32_TFLOPS"] > 0.5
    assert m["fp16_TFLOPS"] > m["fp32_TFLOPS"] and 0 < m["launch_us"] < m["launch_sync_us"] * 10
