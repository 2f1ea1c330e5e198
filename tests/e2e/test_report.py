"""``python -m suites report``: an unreachable server, an unknown run id, a run of another kind, a store that is not
there, an output folder inside a run directory: one line each, nothing made."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.helpers import REPO, free_port, one_error_line, store_at


def report(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "suites.commands.report", *args], cwd=REPO, capture_output=True,
                          text=True, timeout=120)


def test_report_against_an_unreachable_server_is_one_line_within_30_s(tmp_path: Path):
    started = time.monotonic()
    proc = report("--tracking-uri", f"http://127.0.0.1:{free_port()}", "--out", str(tmp_path / "report"))
    assert time.monotonic() - started < 30
    assert "store not readable" in one_error_line(proc)


@pytest.mark.parametrize("flag", ["--mixed-run", "--consolidation-run", "--study"])
def test_report_of_an_unknown_run_id_is_one_line(tmp_path: Path, flag: str):
    uri = store_at(tmp_path / "mlflow.db")
    proc = report("--tracking-uri", uri, flag, "deadbeef", "--out", str(tmp_path / "report"))
    assert one_error_line(proc) == f"error: {flag} deadbeef: no such run in this store"


def test_report_mixed_run_of_a_plain_single_run_says_what_the_run_is(tmp_path: Path):
    from suites.record.store import Tracker

    uri = store_at(tmp_path / "mlflow.db")
    tracker = Tracker(uri, "gpu-mixed-bench", tmp_path / "artifacts")
    run_id = tracker.start("single-m60-8q-mnist-torch", {"bench.role": "scenario"})
    tracker.end(run_id, "FINISHED")
    proc = report("--tracking-uri", uri, "--mixed-run", run_id, "--out", str(tmp_path / "report"))
    assert one_error_line(proc) == (f"error: --mixed-run {run_id}: run 'single-m60-8q-mnist-torch' is a scenario "
                                    "run, not a mixed comparison; leave --mixed-run out for the latest mixed run")
    assert not (tmp_path / "report").exists()


def test_report_of_a_store_that_is_not_there_is_one_line_and_makes_none(tmp_path: Path):
    proc = report("--tracking-uri", f"sqlite:///{tmp_path / 'none.db'}", "--out", str(tmp_path / "report"))
    assert one_error_line(proc).startswith(f"error: --tracking-uri sqlite:///{tmp_path / 'none.db'}: no store at ")
    assert not (tmp_path / "none.db").exists()


def test_report_out_into_a_run_folder_is_refused_and_into_a_report_folder_is_taken(tmp_path: Path):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "results.json").write_text("{}")
    (tmp_path / "empty.db").write_bytes(b"")
    proc = subprocess.run([sys.executable, "-m", "suites", "report", "--out", str(run_dir)], cwd=REPO,
                          capture_output=True, text=True, timeout=120)
    assert f"--out {run_dir}: holds results.json, not a report" in one_error_line(proc)
    assert [p.name for p in run_dir.iterdir()] == ["results.json"]
    proc = subprocess.run([sys.executable, "-m", "suites", "report", "--tracking-uri",
                           f"sqlite:///{tmp_path / 'empty.db'}"], cwd=REPO, capture_output=True, text=True,
                          timeout=120)
    assert "no store at" in one_error_line(proc) and (tmp_path / "empty.db").stat().st_size == 0  # not written
