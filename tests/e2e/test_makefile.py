"""The Makefile's own decisions, read from what ``make -n`` would run (nothing is installed)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.helpers import REPO


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


PRINT_ARGV = "python3 -c 'import json, sys; print(json.dumps(sys.argv[1:]))'"


def argv_given(tmp_path: Path, target: str, program: str, *make_vars: str) -> list[str]:
    """What ``program`` gets in ``make <target> <make_vars>``: the recipe line make would give the shell, run by
    bash as make would, with ``program`` swapped for one that prints its argv. Nothing in the line may have run
    anything else: no marker file in ``tmp_path``."""
    proc = subprocess.run(["make", "-n", target, *make_vars], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    line = next(x for x in proc.stdout.replace("\\\n", "").splitlines() if program in x)
    shown = subprocess.run(["bash", "-c", line.replace(program, PRINT_ARGV, 1)], cwd=tmp_path, capture_output=True,
                           text=True, timeout=60)
    assert shown.returncode == 0, shown.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == [], "the shell ran part of a make variable"
    return json.loads(shown.stdout)


def nasty(tmp_path: Path) -> str:
    return f"x;touch {tmp_path}/a $(touch {tmp_path}/b) `touch {tmp_path}/c` 'q u' \"d\" it's"


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


def test_make_variables_reach_the_command_as_text_never_as_shell(tmp_path: Path):
    """VM_DRIVER='...;touch pwned-grid.run' runs no touch, and make expands no $(...) in a value."""
    value = nasty(tmp_path)
    argv = argv_given(tmp_path, "setup-vm", "'.venv'/bin/python -m suites.backends.vm.image --driver",
                      f"VM_DRIVER={value}")
    assert argv == [value]
    argv = argv_given(tmp_path, "bench", "'.venv'/bin/python -m suites.makeargs", f"profile={value}",
                      f"backend={value}", f"ARGS={value} seed=1")
    assert argv[:3] == [f"{value} seed=1", "suites", "bench"]
    assert f"profile={value}" in argv and f"backend={value}" in argv
    argv = argv_given(tmp_path, "ui", "'.venv'/bin/mlflow", f"URI={value}", f"PORT={value}")
    assert argv[:3] == ["ui", "--backend-store-uri", value] and argv[-1] == value
    for target in ("study", "report", "gpu-check", "bench-ml", "bench-vm", "bench-peer"):
        program = "python3" if target == "gpu-check" else "'.venv'/bin/python"
        assert argv_given(tmp_path, target, f"{program} -m suites.makeargs", f"ARGS={value}",
                          *(["BARE=1"] if target == "gpu-check" else []))[:2] == [value, "suites"]


BARE_TARGETS = ("bench", "report", "compare", "rehearse", "ui", "gpu-check", "study", "size", "bench-ml", "bench-peer")


@pytest.mark.parametrize("target", BARE_TARGETS)
def test_every_command_a_user_runs_has_a_path_without_network(target: str):
    """BARE=1: the bare image's python3 (prepare.sh's wheels on PYTHONPATH), no setup: nothing reaches a registry
    and nothing runs from .venv, for every command a user runs (issue 73: bench, report, compare and rehearse set up
    first)."""
    dry = subprocess.run(["make", "--no-print-directory", "-n", target, "BARE=1"], cwd=REPO, capture_output=True,
                         text=True, timeout=60)
    assert dry.returncode == 0, dry.stderr
    lines = [ln for ln in dry.stdout.replace("\\\n", " ").splitlines() if ln.strip()]  # continued lines joined
    for line in lines:
        assert not any(word in line for word in (".venv", "uv ", "apt-get", "pip install", "setup:")), line
    if target == "ui":
        words = lines[-1].split()
        assert words[words.index("python3"):][:4] == ["python3", "-m", "mlflow", "ui"], lines[-1]
        assert all("python3 -c" in ln for ln in lines[1:-1]), lines
        return
    assert len(lines) == 1 and lines[0].startswith("python3 -m suites.makeargs"), dry.stdout
    assert f" suites {target}" in lines[0], lines[0]


def test_args_are_split_as_a_shell_splits_words_and_nothing_is_run(tmp_path: Path):
    from suites import makeargs

    value = nasty(tmp_path)
    assert makeargs.words("data.root=../shared/data  'study.budget_s=900'") == ["data.root=../shared/data",
                                                                                "study.budget_s=900"]
    assert makeargs.words(value.replace("it's", "its")) == [
        "x;touch", f"{tmp_path}/a", "$(touch", f"{tmp_path}/b)", "`touch", f"{tmp_path}/c`", "q u", "d", "its"]
    proc = subprocess.run([sys.executable, "-m", "suites.makeargs", value, "suites", "bench"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert proc.returncode == 2 and proc.stderr.startswith("error: ARGS=") and "No closing quotation" in proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == []
