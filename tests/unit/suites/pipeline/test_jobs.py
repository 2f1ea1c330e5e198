"""Tests of ``suites/pipeline/jobs.py``'s own rules (its launching is e2e/test_bench.py's and test_sweep's): no
credential in a log line or in Hydra's config copies, a sweep point named by its values, one error line."""

from __future__ import annotations

import logging
from pathlib import Path

from suites.pipeline import jobs

URI = "http://alice:s3cret@mlflow.example:5000"


def test_a_log_line_and_hydras_config_copies_carry_no_credential(tmp_path: Path):
    record = logging.LogRecord("x", logging.INFO, __file__, 1, "retrying %s", (URI,), None)
    assert jobs.Redacting().filter(record) and "s3cret" not in record.getMessage() and "alice" not in record.msg
    (tmp_path / "config.yaml").write_text(f"tracking_uri: {URI}\n")
    (tmp_path / "clean.yaml").write_text("profile: m60-8q\n")
    jobs.redact_files(tmp_path)
    assert "s3cret" not in (tmp_path / "config.yaml").read_text()
    assert (tmp_path / "clean.yaml").read_text() == "profile: m60-8q\n"
    jobs.redact_files(tmp_path / "absent")  # a run that made no folder: nothing to do


def test_a_sweep_point_is_named_by_its_values_else_its_number():
    sweep = jobs.SweepState(named=[["profile=m60-8q"], []])
    assert sweep.label(0) == "profile=m60-8q" and sweep.label(1) == "job 1" and sweep.label(7) == "job 7"
