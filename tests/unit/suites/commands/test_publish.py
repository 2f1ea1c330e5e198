"""Tests of ``suites/commands/publish.py`` without a run (tests/e2e/test_publish.py publishes real ones): the
reference study's bundle, and what it refuses in one ``error:`` line before anything is written."""

from __future__ import annotations

from pathlib import Path

from suites.bundle import read
from suites.commands import publish


def test_reference_writes_the_reference_studys_bundle(tmp_path: Path, capsys):
    assert publish.main(["--reference", "--out", str(tmp_path)]) == 0
    assert read(tmp_path / "reference-study.bundle.tar.gz").doc["origin"] == "published"
    assert "published by its authors" in capsys.readouterr().out


def test_bad_input_is_one_error_line_and_nothing_is_written(tmp_path: Path, capsys):
    for argv, says in ((["--out", str(tmp_path / "o")], "give RUN"),
                       (["abc", "--tracking-uri", f"sqlite:///{tmp_path}/none.db", "--out", str(tmp_path / "o")],
                        "no store at"),
                       (["abc", "--reference", "--out", str(tmp_path / "o")], "give RUN")):
        assert publish.main(argv) == 2
        err = capsys.readouterr().err
        assert err.startswith("error: ") and says in err and err.count("\n") == 1
    assert not (tmp_path / "o").exists()
