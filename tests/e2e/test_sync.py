"""``python -m suites sync`` (suites/record/ingest.py, export.py): an export edited by hand, a link out of it or a
loop, a bad timestamp, a truncated store or an unreachable server is one line and imports nothing."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.helpers import REPO, free_port, one_error_line, store_at
from tests.support.stores import CHILD, export, export_doc, runs_in, sync


def edited(doc: dict, how: str) -> str:
    if how == "truncated":
        return json.dumps(doc)[:150]
    if how == "wrong-type":
        doc["runs"][1]["metrics"]["elapsed_s"] = "sixty"
    elif how == "five-mb-field":
        doc["runs"][1]["params"]["notes"] = "x" * (5 * 2**20)
    elif how == "path-as-run-id":
        doc["runs"][1]["run_id"] = "../../../etc"
    return json.dumps(doc)


@pytest.mark.parametrize("how,says", [("truncated", "runs.json: not JSON"),
                                      ("wrong-type", "runs.json: runs[1].metrics.elapsed_s: must be a number"),
                                      ("five-mb-field", "runs.json: runs[1].params.notes: must be text of at most"),
                                      ("path-as-run-id", "runs.json: runs[1].run_id: '../../../etc' is not a run id")])
def test_an_export_edited_by_hand_is_one_line_and_nothing_is_imported(tmp_path: Path, how: str, says: str):
    folder = tmp_path / "study" / "mlflow-export"
    folder.mkdir(parents=True)
    (folder / "runs.json").write_text(edited(export_doc(), how))
    proc = sync(tmp_path / "study", tmp_path / "team.db")
    assert says in one_error_line(proc)
    assert not (tmp_path / "team.db").exists()  # nothing imported, not even the first run


def test_an_export_whose_artifact_links_out_of_it_is_refused(tmp_path: Path):
    folder = tmp_path / "study" / "mlflow-export"
    (folder / "artifacts" / ("b" * 32)).mkdir(parents=True)
    (folder / "artifacts" / ("b" * 32) / "notes.txt").symlink_to("/etc/hostname")
    (folder / "runs.json").write_text(json.dumps(export_doc()))
    assert "a link out of the export (/etc/hostname)" in one_error_line(sync(tmp_path / "study", tmp_path / "t.db"))
    (folder / "artifacts" / ("b" * 32) / "notes.txt").unlink()
    ok = sync(tmp_path / "study", tmp_path / "t.db")  # the same export, unedited: imported whole
    assert ok.returncode == 0 and "with every run nested below it" in ok.stdout, ok.stderr[-2000:]


def test_an_export_whose_artifacts_folder_is_a_link_is_refused(tmp_path: Path):
    """Hostile round O4: a link at the artifacts folder (or a run's folder in it) copied files from outside the
    export into the store: only links below those levels were refused."""
    elsewhere = tmp_path / "elsewhere" / ("b" * 32)
    elsewhere.mkdir(parents=True)
    (elsewhere / "notes.txt").write_text("not the export's")
    folder = tmp_path / "study" / "mlflow-export"
    folder.mkdir(parents=True)
    (folder / "runs.json").write_text(json.dumps(export_doc()))
    (folder / "artifacts").symlink_to(elsewhere.parent)
    said = one_error_line(sync(tmp_path / "study", tmp_path / "t.db"))
    assert "artifacts: a link (" in said and "not imported" in said
    (folder / "artifacts").unlink()
    (folder / "artifacts").mkdir()
    (folder / "artifacts" / ("b" * 32)).symlink_to(elsewhere)
    assert f"{'b' * 32}: a link (" in one_error_line(sync(tmp_path / "study", tmp_path / "t.db"))
    assert not (tmp_path / "t.db").exists()


def test_sync_to_an_unreachable_server_exits_2_in_one_line(tmp_path: Path):
    fallback = store_at(tmp_path / "fallback.db")
    proc = subprocess.run([sys.executable, "-m", "suites.commands.sync", "--from", fallback, "--to",
                           f"http://127.0.0.1:{free_port()}"], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert "tracking server unreachable" in one_error_line(proc)


def test_sync_run_dir_with_a_duplicated_run_entry_is_refused(tmp_path: Path):
    doc = export_doc()
    doc["runs"].append(dict(doc["runs"][1]))
    folder = tmp_path / "study" / "mlflow-export"
    folder.mkdir(parents=True)
    (folder / "runs.json").write_text(json.dumps(doc))
    proc = subprocess.run([sys.executable, "-m", "suites.commands.sync", "--run-dir", str(tmp_path / "study"), "--to",
                           f"sqlite:///{tmp_path / 'team.db'}"], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert f"runs[2].run_id: {'b' * 32} is listed twice (runs[1] too)" in one_error_line(proc)
    assert not (tmp_path / "team.db").exists()


def test_sync_of_an_export_with_a_link_loop_is_one_short_line_and_imports_nothing(tmp_path: Path):
    folder = export(tmp_path)
    (folder / "artifacts" / CHILD / "loop").symlink_to(".")  # points inside the export: passed the old check
    proc = sync(tmp_path / "study", tmp_path / "team.db")
    line = one_error_line(proc)
    assert line.startswith("error: ") and len(line) <= 300
    assert f"a link inside the export (it holds files only; not imported): artifacts/{CHILD}/loop -> " in line
    assert runs_in(tmp_path / "team.db") == []
    (folder / "artifacts" / CHILD / "loop").unlink()
    ok = sync(tmp_path / "study", tmp_path / "team.db")
    assert ok.returncode == 0, ok.stderr[-2000:]
    assert runs_in(tmp_path / "team.db") == [("part", "FINISHED"), ("study", "FINISHED")]


def test_sync_of_a_child_with_a_bad_timestamp_imports_nothing_and_the_fixed_export_imports_whole(tmp_path: Path):
    doc = export_doc()
    doc["runs"][1]["start_time"] = -1
    export(tmp_path, doc)
    line = one_error_line(sync(tmp_path / "study", tmp_path / "team.db"))
    assert "runs[1].start_time: must be epoch milliseconds (2000 to 2100), got -1" in line
    assert runs_in(tmp_path / "team.db") == []
    export(tmp_path)
    assert sync(tmp_path / "study", tmp_path / "team.db").returncode == 0
    assert runs_in(tmp_path / "team.db") == [("part", "FINISHED"), ("study", "FINISHED")]
    again = sync(tmp_path / "study", tmp_path / "team.db")
    assert "already imported" in again.stdout and len(runs_in(tmp_path / "team.db")) == 2


def test_sync_from_a_truncated_store_names_the_source_and_report_reads_no_empty_store(tmp_path: Path):
    (tmp_path / "fallback.db").write_bytes(b"SQLite format 3\0"[:7] + b"\0" * 90)
    proc = subprocess.run([sys.executable, "-m", "suites", "sync", "--from", f"sqlite:///{tmp_path / 'fallback.db'}",
                           "--to", f"sqlite:///{tmp_path / 'team.db'}"], cwd=REPO, capture_output=True, text=True,
                          timeout=120)
    assert f"--from sqlite:///{tmp_path / 'fallback.db'}: {tmp_path / 'fallback.db'} is not an MLflow store"\
        in one_error_line(proc)
    assert not (tmp_path / "team.db").exists()
