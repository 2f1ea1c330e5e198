"""The suite on a bare GPU image: no virtualenv, no pip install, the dependencies as an unpacked wheel directory on
PYTHONPATH (what ../shared/device/prepare.sh builds), without TensorFlow or moderngl.

This venv's site-packages, less TensorFlow, Keras and moderngl, stands in for that directory; the base
interpreter the venv was made from runs it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from suites.render.tables import unfold
from tests.support import progress
from tests.support.helpers import REPO

LEFT_OUT = ("tensorflow", "tf_keras", "keras", "moderngl", "_moderngl", "glcontext", "tensorboard", "ray")


@pytest.fixture(scope="module")
def bare(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    site = next(Path(p) for p in sys.path if p.endswith("site-packages") and Path(p).is_relative_to(sys.prefix))
    wheels = tmp_path_factory.mktemp("site")
    for entry in site.iterdir():
        stem = entry.name.split("-")[0].split(".")[0].lower()
        if stem not in LEFT_OUT and not entry.name.endswith(".pth"):
            (wheels / entry.name).symlink_to(entry)
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONHOME")}
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if not p.startswith(sys.prefix))
    return {**env, "PYTHONPATH": f"{wheels}{os.pathsep}{REPO}", "PYTHONNOUSERSITE": "1"}


def python() -> str:
    base = Path(sys.base_prefix) / "bin" / f"python{sys.version_info.major}.{sys.version_info.minor}"
    assert base.exists() and sys.base_prefix != sys.prefix, "the tests run in the project's venv"
    return str(base)


def run(env: dict[str, str], *args: str, cwd: Path = REPO) -> subprocess.CompletedProcess:
    """Guarded by its progress (output, files written under ``cwd``), not a total: a busy host only slows it."""
    return progress.run([python(), *args], watch=(cwd,) if cwd != REPO else (), cwd=cwd, env=env)


def test_the_stand_in_lacks_what_a_bare_image_lacks(bare: dict[str, str]):
    proc = run(bare, "-c", "import importlib.util as u, sys; print(sys.prefix, [m for m in "
                           "('tensorflow', 'keras', 'moderngl', 'ray', 'torch', 'hydra', 'mlflow') if u.find_spec(m)])")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split(" ", 1)[1].strip() == "['torch', 'hydra', 'mlflow']"


def test_bench_help_and_a_smoke_run_work_from_the_wheel_directory(bare: dict[str, str], tmp_path: Path):
    helped = run(bare, "-m", "suites", "bench", "--help")
    assert helped.returncode == 0 and "Powered by Hydra" in helped.stdout, helped.stderr[-2000:]
    smoke = run(bare, "-m", "suites", "bench", "+preset=smoke", "progress=quiet",
                f"tracking_uri=sqlite:///{tmp_path / 'mlflow.db'}", f"artifact_dir={tmp_path / 'art'}",
                f"data.cache_dir={tmp_path / 'data'}", f"hydra.run.dir={tmp_path / 'run'}")
    assert smoke.returncode == 0, smoke.stdout[-2000:] + smoke.stderr[-2000:]
    assert '"status": "ok"' in (tmp_path / "run" / "results.json").read_text()
    assert "Traceback" not in smoke.stderr


def test_missing_tensorflow_moderngl_and_ray_are_one_line_each(bare: dict[str, str], tmp_path: Path):
    plan = run(bare, "-m", "suites", "study", "--plan", f"study.out_dir={tmp_path / 'study'}")
    assert plan.returncode == 0, plan.stderr[-2000:]
    lines = plan.stdout.splitlines()
    assert [ln for ln in lines if "tensorflow" in ln] == ["  skip gpu-vs-cpu-keras: tensorflow (extra tf, or tf-gpu "
                                                          "on a GPU host) not installed: Keras rows skipped"]
    assert sum("moderngl (extra graphics) not installed: CAD guests cannot render" in ln for ln in lines) == 2
    assert "Traceback" not in plan.stderr and not (tmp_path / "study").exists()
    for workload, module in (("mnist-tf", "tensorflow"), ("graphics-replay", "moderngl")):  # refused, not crashed
        asked = run(bare, "-m", "suites", "bench", f"workload={workload}", "+preset=smoke", "progress=quiet",
                    f"tracking_uri=sqlite:///{tmp_path / 'mlflow.db'}", f"hydra.run.dir={tmp_path / 'run'}",
                    f"data.cache_dir={tmp_path / 'data'}")
        lines = [ln for ln in asked.stderr.splitlines() if ln.strip()]
        assert asked.returncode == 2 and len(lines) == 1, asked.stderr[-2000:]
        assert lines[0].startswith(f"error: workload {workload} needs {module} (extra ")
        assert not (tmp_path / "run").exists()
    ray = run(bare, "-m", "suites", "bench", "backend=ray", "ray.address=127.0.0.1:6399", "+preset=smoke",
              f"tracking_uri=sqlite:///{tmp_path / 'mlflow.db'}", f"hydra.run.dir={tmp_path / 'run'}")
    lines = [ln for ln in ray.stderr.splitlines() if ln.strip()]
    assert ray.returncode == 2 and lines == ["error: backend=ray: ray is not installed in this Python (extra ray: "
                                             "pip install -e '.[ray]')"], ray.stderr[-2000:]


def test_gpu_check_runs_from_the_wheel_directory(bare: dict[str, str], tmp_path: Path):
    """What a device call starts with: ``python3 -m suites gpu-check`` on the bare image (here without a GPU: every
    check skipped, saying why, and the tarball to bring back)."""
    done = run(bare, "-m", "suites", "gpu-check", f"out_dir={tmp_path}")
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stdout[-2000:] + done.stderr[-2000:]
    said = unfold(done.stdout)  # lines folded at 120 columns, read whole
    assert "skipped: no GPU" in said and "bring back: " in said
    assert len(list(tmp_path.glob("*/gpu-check-*.tar.gz"))) == 1
