"""Tests of ``suites/record/outdirs.py``: a folder a command writes is named, outside the source tree and makeable;
an explicit run directory is new or empty and held by one command; a killed run's half-written folder is found."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from suites.errors import ConfigError
from suites.record.outdirs import claim_run_dir, half_written_beside, held, require_output_dir
from tests.support.helpers import REPO


def test_a_folder_is_named_outside_the_source_tree_and_makeable(tmp_path: Path):
    with pytest.raises(ConfigError, match=r"^out: empty; name a folder"):
        require_output_dir(" ", "out")
    with pytest.raises(ConfigError, match=r"^out: .*/configs is in the suite's source tree"):
        require_output_dir(REPO / "configs", "out")
    require_output_dir(REPO / "outputs" / "x-test", "out")  # the repository's ignored output folders take results
    (tmp_path / "file").write_text("")
    with pytest.raises(ConfigError, match=r"cannot be created"):
        require_output_dir(tmp_path / "file" / "run", "out")


def test_a_run_folder_is_held_by_one_command_and_must_be_new_or_empty(tmp_path: Path):
    folder = tmp_path / "a" / "b" / "run"
    claim = claim_run_dir(folder)
    assert held(folder)
    with pytest.raises(ConfigError, match=r"is in use by another benchmark run on this host"):
        claim_run_dir(folder)
    claim.release()
    assert not held(folder)
    (folder / "results.json").write_text("{}")
    with pytest.raises(ConfigError, match=r"already holds files \(results.json\): a run directory must be new"):
        claim_run_dir(folder)


def test_a_refused_claim_leaves_no_folder_it_made_and_a_half_written_run_is_found(tmp_path: Path):
    claim = claim_run_dir(tmp_path / "x" / "y" / "run")
    claim.release()
    claim.tidy()
    assert not (tmp_path / "x").exists()
    runs = tmp_path / "runs"
    for name, age in (("done", 20), ("killed", 10)):
        (runs / name / ".hydra").mkdir(parents=True)
        os.utime(runs / name / ".hydra", (1e9 - age, 1e9 - age))
    (runs / "done" / "results.json").write_text("{}")
    assert half_written_beside(runs / "now") == runs / "killed"  # the newest, with no results: killed
    (runs / "killed" / "results.json").write_text("{}")
    assert half_written_beside(runs / "now") is None
