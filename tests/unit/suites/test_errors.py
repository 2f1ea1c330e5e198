"""Tests of ``suites/errors.py``."""

from __future__ import annotations

from suites.errors import redact


def test_redact_removes_user_info_and_token_values():
    assert redact("http://alice:S3cretPW@host:5000/x?token=tok3n-abc&page=2") == "http://***@host:5000/x?token=***&page=2"
    assert redact("sqlite:////tmp/a.db") == "sqlite:////tmp/a.db"
