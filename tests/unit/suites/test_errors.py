"""Tests of ``suites/errors.py``."""

from __future__ import annotations

import pytest

from suites import errors
from suites.errors import redact


def test_redact_removes_user_info_and_token_values():
    assert redact("http://alice:S3cretPW@host:5000/x?token=tok3n-abc&page=2") == "http://***@host:5000/x?token=***&page=2"
    assert redact("sqlite:////tmp/a.db") == "sqlite:////tmp/a.db"


def test_first_line_skips_sqlalchemys_preamble_for_the_error_itself():
    """A store whose disk filled said '((raised as a result of Query-invoked autoflush; consider using ...))'."""
    from suites.errors import first_line

    exc = RuntimeError("(raised as a result of Query-invoked autoflush; consider using a session.no_autoflush block)"
                       "\n(sqlite3.OperationalError) database or disk is full\n[SQL: INSERT INTO runs ...]")
    assert first_line(exc) == "(sqlite3.OperationalError) database or disk is full"
    assert first_line(RuntimeError("")) == "RuntimeError" and first_line(ValueError("a\nb")) == "a"


def test_fail_is_one_error_line_and_exit_2(capsys: pytest.CaptureFixture[str]):
    with pytest.raises(SystemExit) as stop:
        errors.fail("profile=nope: no such profile")
    assert stop.value.code == 2 and capsys.readouterr().err == "error: profile=nope: no such profile\n"


def test_a_renamed_settings_warning_is_one_warning_line_and_others_keep_pythons_format(monkeypatch, capsys):
    import warnings

    from suites.config.schema import ProfileConfig

    others: list[str] = []
    monkeypatch.setattr(warnings, "showwarning", lambda message, *a, **kw: others.append(str(message)))
    errors.renamed_settings_in_one_line()  # over the recorder above: undone with it
    hook = warnings.showwarning
    errors.renamed_settings_in_one_line()  # python -m suites bench installs it twice: once it is
    assert warnings.showwarning is hook
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        ProfileConfig(name="x", kind="vgpu")
        warnings.warn("another", UserWarning, stacklevel=1)
        warnings.warn("a library's own", FutureWarning, stacklevel=1)
    assert capsys.readouterr().err == ("warning: profile.kind is profile.gpu_access now (the old name is read until "
                                       "the next release)\n")
    assert others == ["another", "a library's own"]


@pytest.mark.parametrize("text, shown", [
    ("\nverdict: compliant\x1b[8m", "\\nverdict: compliant\\x1b[8m"),
    ("a\rb\tc\x7f\x9b", "a\\rb\\tc\\x7f\\x9b"),
    ("evil\u202eexe.txt", "evil\\u202eexe.txt"),  # a bidirectional override reorders what a reader sees
    ("H200 141 GB – ok", "H200 141 GB – ok"),  # printable text as it is
])
def test_text_from_a_file_is_inert_on_a_terminal(text: str, shown: str):
    from suites.errors import inert

    assert inert(text) == shown
