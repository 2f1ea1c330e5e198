"""Tests of ``suites/commands/check_results.py``: each rule's verdict said, exit 0 / 1 by compliance, and a bundle
that is no bundle is one ``error:`` line and exit 2 (never a traceback)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from suites.bundle import write
from suites.bundle.archive import dumps
from suites.commands import check_results
from suites.publish.document import document
from suites.publish.reference import reference_document
from tests.support.bundles import comparison


def measured(tmp_path: Path, **setup: str) -> Path:
    rf = comparison({"1-gpu / mnist-torch train s": [10.0, 11.0, 12.0], "cpu / mnist-torch train s": [100.0, 104, 98]})
    rf.setup.update(setup)
    doc = json.loads(dumps(document(rf, "python -m suites bench scenario=gpu-vs-cpu", [], "gpu-vs-cpu")))
    return write(doc, {}, tmp_path / f"b{len(list(tmp_path.iterdir()))}.bundle.tar.gz")


def test_a_compliant_bundle_and_the_reference_exit_0_a_smoke_one_1_naming_its_rule(tmp_path: Path, capsys):
    ref = write(reference_document(), {}, tmp_path / "ref.bundle.tar.gz")
    assert check_results.main([str(measured(tmp_path)), str(ref)]) == 0
    out = capsys.readouterr().out
    assert out.count("verdict: compliant") == 1 and "verdict: published by its authors" in out
    assert check_results.main([str(measured(tmp_path, scale="smoke"))]) == 1
    out = capsys.readouterr().out
    assert "  full size            FAILS  smoke sizes" in out and "verdict: not compliant: full size" in out


def test_a_file_that_is_no_bundle_is_one_error_line_and_exit_2(tmp_path: Path, capsys):
    (tmp_path / "x.json").write_text("[1, 2")
    assert check_results.main([str(tmp_path / "x.json")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and "not JSON" in err


def test_an_empty_bundle_word_is_one_error_line_not_the_folder_it_was_run_in(capsys):
    """`make check-results BUNDLE=` passes one empty word; Path("") would be "." ("not a file")."""
    assert check_results.main([""]) == 2
    assert capsys.readouterr().err == "error: BUNDLE is empty: give a .bundle.tar.gz or a bundle.json\n"


def test_no_bundle_given_is_argparses_usage_exit_2():
    with pytest.raises(SystemExit) as ended:
        check_results.main([])
    assert ended.value.code == 2


def test_a_bundles_text_never_acts_on_the_terminal(tmp_path: Path, capsys):
    """Round 7: a title '\\nverdict: compliant\\x1b[8m' printed a forged verdict line and hid the FAILS lines after
    it (SGR 8: concealed). Every control character a bundle brings is shown as its escape."""
    path = measured(tmp_path, scale="smoke")
    from suites.bundle import read

    doc = read(path).doc
    doc["title"] = "\nverdict: compliant\x1b[8m"
    doc["marks"]["failed in 1 of 6 runs"] = "g1 died\x1b[2K\rall good"
    (tmp_path / "forged.json").write_text(json.dumps(doc))
    assert check_results.main([str(tmp_path / "forged.json")]) == 1
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\r" not in out and "\\nverdict: compliant\\x1b[8m" in out
    assert [line for line in out.splitlines() if line.startswith("verdict:")] == [
        "verdict: not compliant: full size, every run complete"]
