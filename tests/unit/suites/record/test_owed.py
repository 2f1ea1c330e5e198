"""Tests of ``suites/record/owed.py``: a note in the user's own ledger is still data. Round 7 (issue 87), each seen on
fa8ae96: a note with run_dir=/etc was recorded as a KILLED run; a guest id '../../../../tmp/x/secret' copied a file
from outside into the artifact store; a note naming a live RUNNING run ended it KILLED."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import psutil
import pytest

from suites.record import owed
from suites.record.store import Tracker
from tests.support.helpers import all_runs, store_at

pytestmark = pytest.mark.heavy  # a real store


def dead_pid() -> int:
    top = int(Path("/proc/sys/kernel/pid_max").read_text())
    return next(p for p in range(top - 1, 1, -1) if not psutil.pid_exists(p))


def note(key: str, **facts: object) -> None:
    owed.LEDGER.prepare()
    (owed.LEDGER.folder / key).write_text(json.dumps({"pid": dead_pid(), "started": time.time() - 60, **facts}))


def collect(uri: str, tmp_path: Path) -> list[str]:
    said: list[str] = []
    owed.collect((uri, "gpu-mixed-bench"), lambda: Tracker(uri, "gpu-mixed-bench", tmp_path / "art"), said.append)
    return said


def test_a_note_naming_a_folder_that_is_no_run_directory_is_forgotten_not_recorded(tmp_path: Path):
    uri = store_at(tmp_path / "m.db")
    note("scenario-1-x", what="scenario", uri=uri, experiment="gpu-mixed-bench", run_dir="/etc", name="x",
         parent=None, tags={})
    said = collect(uri, tmp_path)
    assert said == [f"warning: a note in {owed.LEDGER.folder} not taken (/etc is no run directory (no config.yaml)): "
                    "forgotten"]
    assert all_runs(uri).empty and not list(owed.LEDGER.folder.glob("scenario-*"))


def test_a_guest_id_that_walks_out_of_its_run_directory_is_refused(tmp_path: Path):
    uri = store_at(tmp_path / "m.db")
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "config.yaml").write_text("profile: {}\n")
    (tmp_path / "secret.log").write_text("the neighbour's secret")
    evil = os.path.relpath(tmp_path / "secret", run_dir)  # ../secret: its log would be ../secret.log
    (run_dir / "results.json").write_text(json.dumps({"status": "ok", "guests": [{"spec": {"guest_id": evil}}]}))
    note("scenario-1-y", what="scenario", uri=uri, experiment="gpu-mixed-bench", run_dir=str(run_dir), name="y",
         parent=None, tags={})
    said = collect(uri, tmp_path)
    assert len(said) == 1 and f"guest id {evil!r} is no guest's" in said[0]
    assert all_runs(uri).empty and not any(p.name == "secret.log" for p in (tmp_path / "art").rglob("*"))


def test_a_note_naming_a_run_a_live_runner_holds_is_skipped(tmp_path: Path):
    uri = store_at(tmp_path / "m.db")
    t = Tracker(uri, "gpu-mixed-bench", tmp_path / "art")
    live = t.start("running", {"bench.role": "comparison"})
    owed.owe_end(t, live)  # this process's own note: its maker is alive
    note("run-forged", what="run", uri=t.uri, experiment="gpu-mixed-bench", run_id=live)
    assert collect(uri, tmp_path) == []
    assert t.client.get_run(live).info.status == "RUNNING"
    owed.paid(owed.owe_key(live))
