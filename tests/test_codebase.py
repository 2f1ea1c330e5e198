"""The layout a maintainer finds their way in (issue 41): one entry point listing every command, one meaning per
module name, paths resolved once, one GPU table, one deadline loop, gpu_probe's public surface named."""

from __future__ import annotations

import collections
import importlib
import subprocess
import sys
import time
from pathlib import Path

import pytest

import gpu_probe
from gpu_probe.datasheet import LARGEST_MiB, datasheet, memory_MiB
from suites.commands import COMMANDS, usage
from suites.commands import main as commands_main
from suites.config.paths import absolute_paths, absolute_uri
from suites.data.options import DataConfig
from suites.errors import ConfigError
from suites.poll import wait_until

from .helpers import REPO, compose_config

# Same file name allowed: the same role in sibling packages (each package's __main__, each plugin family's base).
SHARED_NAMES = {"__init__.py", "__main__.py", "base.py"}


def test_every_command_is_listed_and_has_main():
    listed = usage()
    for name, (module, what, _) in COMMANDS.items():
        assert f"  {name} " in listed and what in listed
        assert callable(importlib.import_module(module).main), module
    assert set(COMMANDS) >= {"bench", "study", "report", "sync", "gpu-check", "bench-ml", "bench-vm", "bench-peer"}


def test_an_unknown_command_is_one_error_line(capsys: pytest.CaptureFixture[str]):
    assert commands_main(["benhc"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: no command 'benhc'; the commands: bench, study")


def test_no_two_modules_share_a_file_name_and_study_is_one_package():
    names = collections.defaultdict(list)
    for top in ("suites", "gpu_probe"):
        for path in (REPO / top).rglob("*.py"):
            names[path.name].append(path.relative_to(REPO).as_posix())
    shared = {n: p for n, p in names.items() if len(p) > 1 and n not in SHARED_NAMES}
    assert not shared, shared
    studies = sorted(p.relative_to(REPO).as_posix() for p in (REPO / "suites").rglob("*study*"))
    assert studies == ["suites/study"], studies


def test_no_function_takes_a_base_directory():
    for top in ("suites", "gpu_probe"):
        for path in (REPO / top).rglob("*.py"):
            assert "base_dir" not in path.read_text(), path


def test_paths_are_absolute_once_the_config_is_loaded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.chdir(tmp_path)
    cfg = compose_config("data.root=rel/data", "tracking_uri=sqlite:///s/m.db", "artifact_dir=art",
                         "ray.working_dir=.", "vm.image_dir=img")
    assert cfg.data.root == str(tmp_path / "rel" / "data") and cfg.data.cache_dir == str(tmp_path / "outputs/data")
    assert cfg.tracking_uri == f"sqlite:///{tmp_path / 's' / 'm.db'}" and cfg.artifact_dir == str(tmp_path / "art")
    assert cfg.ray.working_dir == str(tmp_path) and cfg.vm.image_dir == str(tmp_path / "img")
    assert cfg.fallback_tracking_uri.startswith(f"sqlite:///{tmp_path}/")
    assert not (tmp_path / "s").exists()  # resolving writes nothing (the store's folder is made when it is opened)


def test_absolute_paths_leaves_its_argument_alone(tmp_path: Path):
    given = DataConfig(root="data", cache_dir="")
    made = absolute_paths(given, tmp_path)
    assert (given.root, made.root, made.cache_dir) == ("data", str(tmp_path / "data"), "")  # "" stays unset
    assert absolute_uri("http://h:5000", tmp_path) == "http://h:5000"
    assert absolute_uri("sqlite:////abs/m.db", tmp_path) == "sqlite:////abs/m.db"


def test_profiles_check_their_framebuffer_against_the_datasheet():
    assert memory_MiB("NVIDIA H200") == 141 * 1024 and memory_MiB("NVIDIA A100-PCIE-40GB") == 40 * 1024
    assert memory_MiB("Tesla M60") == datasheet("Tesla M60").memory_MiB == 8192 and memory_MiB("Quadro X") is None
    with pytest.raises(ConfigError, match="16384 MiB is more than the Tesla M60's 8192 MiB"):
        compose_config("profile=m60-8q", "profile.framebuffer_MiB=16384")
    with pytest.raises(ConfigError, match=f"more than the largest known GPU's {LARGEST_MiB} MiB"):
        compose_config("profile=m60-8q", "profile.gpu_model=Quadro X", f"profile.framebuffer_MiB={LARGEST_MiB + 1}")


def test_wait_until_gives_up_at_its_bound_and_returns_as_soon_as_ready():
    t0 = time.monotonic()
    assert wait_until(lambda: False, 0.2, 0.05) is False and time.monotonic() - t0 >= 0.2
    calls = iter([False, False, True])
    t0 = time.monotonic()
    assert wait_until(lambda: next(calls), 30, 0.01) is True and time.monotonic() - t0 < 5


def test_gpu_probe_names_its_public_surface():
    assert len(gpu_probe.__all__) == len(set(gpu_probe.__all__))
    for name in gpu_probe.__all__:
        assert getattr(gpu_probe, name) is not None, name
    assert {"Nvml", "NA", "Inventory", "Sampler", "SampleSet", "summarize", "ratio_interval", "datasheet"} <= set(
        gpu_probe.__all__)


@pytest.mark.e2e
def test_python_m_suites_lists_the_commands_and_runs_one():
    helped = subprocess.run([sys.executable, "-m", "suites", "--help"], cwd=REPO, capture_output=True, text=True,
                            timeout=60)
    assert helped.returncode == 0 and all(f"  {name} " in helped.stdout for name in COMMANDS), helped.stdout
    sync = subprocess.run([sys.executable, "-m", "suites", "sync", "--help"], cwd=REPO, capture_output=True,
                          text=True, timeout=60)
    assert sync.returncode == 0 and sync.stdout.startswith("usage: python -m suites sync"), sync.stdout
