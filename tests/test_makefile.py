"""The Makefile's own decisions, read from what ``make -n`` would run (nothing is installed)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from .helpers import REPO

pytestmark = pytest.mark.e2e  # make starts a shell and, on the look for a GPU, python3


def dry_setup(tmp_path: Path, *make_vars: str, nvidia_smi: str | None = None) -> str:
    path = os.environ["PATH"]
    if nvidia_smi is not None:  # a stand-in for the driver's tool, first on PATH
        (tmp_path / "bin").mkdir()
        tool = tmp_path / "bin" / "nvidia-smi"
        tool.write_text(f"#!/bin/sh\n{nvidia_smi}\n")
        tool.chmod(0o755)
        path = f"{tmp_path / 'bin'}{os.pathsep}{path}"
    proc = subprocess.run(["make", "-n", "setup", f"VENV={tmp_path / 'venv'}", *make_vars], cwd=REPO,
                          capture_output=True, text=True, timeout=60, env={**os.environ, "PATH": path})
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


@pytest.mark.parametrize("make_vars,extra", [((), "tf-gpu"), (("GPU_HOST=0",), "tf")], ids=["looked", "told"])
def test_setup_takes_tensorflow_with_its_cuda_libraries_where_a_gpu_answers(tmp_path: Path, make_vars: tuple[str],
                                                                           extra: str):
    dry = dry_setup(tmp_path, *make_vars, nvidia_smi='echo "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-5a1e)"')
    assert f"-e '.[dev,{extra},graphics,ray,slurm]'" in dry
    assert f"setup: TensorFlow from the {extra} extra" in dry  # said, with why


def test_a_gpu_tool_that_answers_no_device_is_no_gpu(tmp_path: Path):
    dry = dry_setup(tmp_path, nvidia_smi='echo "No devices were found"; exit 6')
    if "TensorFlow from the tf-gpu extra" in dry:  # NVML itself counted a GPU on this host: not what is tested
        assert "a GPU answered" in dry
    else:
        assert "-e '.[dev,tf,graphics,ray,slurm]'" in dry and "tensorflow-cpu" in dry
