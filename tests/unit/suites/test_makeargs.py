"""Tests of ``suites/makeargs.py``: the Makefile's ARGS split as a shell splits words, nothing a shell would run."""

from __future__ import annotations

import pytest

from suites.makeargs import main, words


def test_args_split_as_a_shell_splits_words_and_nothing_is_run():
    assert words("a=1 'b=x y' c=\"$(rm -rf /)\" d=`id`;e") == ["a=1", "b=x y", "c=$(rm -rf /)", "d=`id`;e"]
    assert words("") == []


def test_an_unclosed_quote_is_one_error_line_and_exit_2(capsys: pytest.CaptureFixture[str]):
    assert main(["a='b", "suites"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ARGS=\"a='b\": ")
    assert main([]) == 2
