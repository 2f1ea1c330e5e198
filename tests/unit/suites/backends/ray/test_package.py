"""Tests of ``suites/backends/ray/package.py``: what ray.working_dir ships, by Ray's own packer."""

from __future__ import annotations

from pathlib import Path

import pytest

from suites.backends.ray.package import check_shipped, dropped_by, package_of, shipped_files, suite_modules
from suites.config.schema import RayConfig
from suites.errors import ConfigError

REPO = Path(__file__).resolve().parents[5]
UNANCHORED = [".git", ".venv", ".uv", ".whl", ".gl", ".vm", "outputs", "multirun", "data"]  # cce1a94's default


def a_suite(root: Path) -> Path:
    """A folder shaped like the suite's: its packages, a data package, and the folders the excludes leave out."""
    for rel in ("suites/__init__.py", "suites/data/__init__.py", "suites/data/mnist.py", "gpu_probe/__init__.py",
                "data/MNIST/raw/train.gz", "outputs/runs/r/results.json", ".venv/lib/x.py"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("x")
    return root


@pytest.mark.heavy
def test_the_default_excludes_ship_every_module_of_the_suite_and_leave_out_the_data_and_outputs():
    shipped = shipped_files(REPO, RayConfig().excludes)
    modules = suite_modules(REPO)
    assert "suites/data/__init__.py" in modules and "gpu_probe/nvml.py" in modules
    assert set(modules) <= shipped
    assert not [f for f in shipped if f.split("/")[0] in (".venv", ".git", "outputs", "data")]
    check_shipped(str(REPO), RayConfig().excludes)  # no error


def test_an_unanchored_data_entry_drops_the_data_package_and_is_refused_naming_it(tmp_path: Path):
    root = a_suite(tmp_path)
    assert "suites/data/mnist.py" not in shipped_files(root, UNANCHORED)
    with pytest.raises(ConfigError) as err:
        check_shipped(str(root), UNANCHORED)
    line = str(err.value)
    assert "\n" not in line and "2 module file(s) of suites.data" in line
    assert "dropped by 'data'" in line and "('/data')" in line
    check_shipped(str(root), ["/data", "/outputs", "/.venv"])  # anchored: only the root's data folder


def test_an_ignore_file_in_the_folder_that_drops_a_module_is_named(tmp_path: Path):
    root = a_suite(tmp_path)
    (root / ".rayignore").write_text("gpu_probe\n")
    with pytest.raises(ConfigError, match=r"of gpu_probe .*dropped by a \.gitignore/\.rayignore in it"):
        check_shipped(str(root), ["/data"])


def test_a_folder_that_is_not_the_suites_is_not_checked(tmp_path: Path):
    (tmp_path / "data").mkdir()
    (tmp_path / "job.py").write_text("x")
    assert suite_modules(tmp_path) == []
    check_shipped(str(tmp_path), ["*.py"])  # the nodes must have the suite installed: the placement note says so


def test_the_entry_that_drops_a_path_and_the_package_it_belongs_to():
    assert dropped_by("suites/data/mnist.py", ["/outputs", "data"]) == "data"
    assert dropped_by("suites/data/mnist.py", ["/data", "/outputs"]) == ""
    assert dropped_by("gpu_probe/nvml.py", ["*.py"]) == "*.py"
    assert package_of("suites/data/mnist.py") == "suites.data"
    assert package_of("suites/backends/ray/agent.py") == "suites.backends"
    assert package_of("suites/errors.py") == "suites"


def test_the_check_walks_the_folder_once_however_many_modules_it_holds(tmp_path: Path, monkeypatch):
    """Each module looked up in a walk of its own made the check of the suite's folder take 15 s before a Ray run."""
    from suites.backends.ray import package

    root = a_suite(tmp_path)
    walks = []
    real = package.shipped_files
    monkeypatch.setattr(package, "shipped_files", lambda *a: walks.append(a) or real(*a))
    with pytest.raises(ConfigError):
        check_shipped(str(root), UNANCHORED)
    check_shipped(str(root), ["/data"])
    assert len(suite_modules(root)) == 4 and len(walks) == 2
