"""Tests of ``suites/config/paths.py``."""

from __future__ import annotations

from pathlib import Path

import pytest

from suites.config.paths import absolute_paths, absolute_uri
from suites.data.options import DataConfig
from tests.support.helpers import compose_config


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
