"""Tests of ``suites/commands/catalog.py``: a folder of bundles as one page beside the reference study; a file that
is no bundle listed as not read (a warning line), never the end; a DIR that is no folder one ``error:`` line."""

from __future__ import annotations

from pathlib import Path

from suites.bundle import write
from suites.commands import catalog
from suites.publish.reference import reference_document


def test_a_folder_of_bundles_is_one_page_and_a_bad_file_is_listed_not_read(tmp_path: Path, capsys):
    bundles = tmp_path / "in"
    bundles.mkdir()
    write(reference_document(), {}, bundles / "reference-study.bundle.tar.gz")  # the catalog's own: not twice
    (bundles / "torn.bundle.tar.gz").write_bytes(b"\x1f\x8b" + b"\x00" * 20)
    assert catalog.main([str(bundles), "--out", str(tmp_path / "site")]) == 0
    said = capsys.readouterr()
    assert "warning: not in the catalog: " in said.err and "1 bundle(s): 1 compliant or published" in said.out
    html = (tmp_path / "site" / "index.html").read_text()
    assert html.count("the reference study (published by its authors") == 1 and "bundles not read" in html


def test_a_dir_that_is_no_folder_is_one_error_line(tmp_path: Path, capsys):
    assert catalog.main([str(tmp_path / "none"), "--out", str(tmp_path / "site")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: DIR=") and err.count("\n") == 1 and not (tmp_path / "site").exists()


def test_an_empty_dir_is_one_error_line_and_writes_nothing(tmp_path: Path, capsys, monkeypatch):
    """`make catalog DIR=`: not a catalog of the folder it was run in."""
    monkeypatch.chdir(tmp_path)
    assert catalog.main(["", "--out", str(tmp_path / "site")]) == 2
    err = capsys.readouterr().err
    assert err == "error: DIR is empty: give the folder that holds the bundles\n" and not (tmp_path / "site").exists()
