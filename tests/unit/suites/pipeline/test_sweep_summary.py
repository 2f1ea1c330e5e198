"""Tests of ``suites/pipeline/sweep_summary.py``: a sweep's summary run, written through the Recorder into the
sweep's store with its files and its Duration from the first job's start, or into the fallback store (tagged as
such) where the sweep's own store cannot be opened; a sweep folder with no job in it records nothing."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from suites.config.compose import compose_raw
from suites.config.schema import register_configs
from suites.pipeline import sweep_summary
from suites.record.store_reader import StoreReader
from tests.support.helpers import free_port, store_at


def sweep_config(tmp_path: Path, uri: str):
    register_configs()
    return compose_raw([f"tracking_uri={uri}", f"fallback_tracking_uri={store_at(tmp_path / 'fallback.db')}",
                        f"artifact_dir={tmp_path / 'art'}", f"hydra.sweep.dir={tmp_path / 'sweep'}"], with_hydra=True)


def test_the_summary_run_holds_its_files_and_its_duration_from_the_first_jobs_start(tmp_path: Path):
    uri = store_at(tmp_path / "mlflow.db")
    csv = tmp_path / "sweep_summary.csv"
    csv.write_text("job,profile\n0,m60-8q\n")
    started = time.time() - 30
    run_id = sweep_summary.record(sweep_config(tmp_path, uri), tmp_path / "sweep", [csv], 2, started)
    run = StoreReader(uri).run(run_id)
    assert run.name == "sweep-sweep" and run.tags["bench.role"] == "sweep" and run.status == "FINISHED"
    assert run.params == {"sweep_dir": str(tmp_path / "sweep"), "jobs": "2"}
    assert abs(run.start_time_ms / 1000 - started) < 1
    assert (tmp_path / "art").is_dir() and list((tmp_path / "art").rglob("sweep_summary.csv"))


def test_a_store_that_cannot_be_opened_sends_the_summary_to_the_fallback_store(tmp_path: Path):
    dead = f"http://127.0.0.1:{free_port()}"  # no server there
    cfg = sweep_config(tmp_path, dead)
    run_id = sweep_summary.record(cfg, tmp_path / "sweep", [], 1, time.time())
    run = StoreReader(OmegaConf.select(cfg, "fallback_tracking_uri")).run(run_id)
    assert run.tags["bench.role"] == "sweep" and run.tags["bench.fallback_for"] == dead


@pytest.mark.heavy
def test_a_sweep_folder_with_no_job_records_nothing(tmp_path: Path, capsys):
    uri = store_at(tmp_path / "mlflow.db")
    (tmp_path / "sweep").mkdir()
    sweep_summary.SweepSummary().on_multirun_end(sweep_config(tmp_path, uri))
    assert capsys.readouterr().out == "" and StoreReader(uri).latest("gpu-mixed-bench", "sweep") is None
