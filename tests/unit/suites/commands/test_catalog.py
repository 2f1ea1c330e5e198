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


def test_an_out_folder_whose_plots_is_a_file_or_that_holds_other_files_is_one_error_line(tmp_path: Path, capsys):
    """Round 7: `catalog --out D` where D/plots is a file was a traceback; a catalog is written whole into its place,
    so a folder of anything else is refused, never replaced."""
    bundles = tmp_path / "in"
    bundles.mkdir()
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "plots").write_text("not a folder")
    assert catalog.main([str(bundles), "--out", str(tmp_path / "d")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"error: --out {tmp_path / 'd'}: its plots is not a folder")
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / "thesis.tex").write_text("mine")
    assert catalog.main([str(bundles), "--out", str(tmp_path / "home")]) == 2
    assert "holds 'thesis.tex', not a catalog's" in capsys.readouterr().err
    assert (tmp_path / "home" / "thesis.tex").read_text() == "mine"


def test_an_interrupted_catalog_leaves_the_old_one_whole(tmp_path: Path, capsys, monkeypatch):
    """Round 7: SIGINT to make catalog at 5 s left the old index.html beside plots already replaced. The new site is
    built beside the old one and renamed into place: here the interrupt lands as the new page is written."""
    import pytest

    from suites.publish import site

    bundles = tmp_path / "in"
    bundles.mkdir()
    assert catalog.main([str(bundles), "--out", str(tmp_path / "site")]) == 0
    before = (tmp_path / "site" / "index.html").read_text()

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(site, "page", interrupted)
    with pytest.raises(KeyboardInterrupt):
        catalog.main([str(bundles), "--out", str(tmp_path / "site")])
    assert (tmp_path / "site" / "index.html").read_text() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in", "site"]  # no half-built folder left beside it


def test_a_bundle_claiming_the_reference_studys_id_is_judged_never_dropped(tmp_path: Path, capsys):
    """Round 7: a bundle whose id was reference-study was dropped in silence; only the reference study as this suite
    ships it is listed once. A forged copy is listed, judged, and not compliant."""
    bundles = tmp_path / "in"
    bundles.mkdir()
    forged = reference_document()
    forged["ratios"][0]["summary"].update(median=25.0, low=24.0, high=26.0, n=30)
    write(forged, {}, bundles / "forged.bundle.tar.gz")
    assert catalog.main([str(bundles), "--out", str(tmp_path / "site")]) == 0
    assert "2 bundle(s): 1 compliant or published, 1 not compliant" in capsys.readouterr().out
    assert "not compliant: origin" in (tmp_path / "site" / "index.html").read_text()
