"""Tests of ``suites/record/rundir.py``."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path

import pytest

from suites.record.rundir import write_atomic


def test_a_disk_that_fills_while_results_are_written_leaves_the_last_whole_file(tmp_path: Path,
                                                                              monkeypatch: pytest.MonkeyPatch):
    """A fault injected at the write (ENOSPC at fsync): the earlier results.json stays whole, nothing half-written
    is left to be read back as a result, and the error reaches the caller (the run records it as its failure)."""
    path = tmp_path / "results.json"
    write_atomic(path, json.dumps({"status": "ok", "guests": [1, 2]}))

    def full(fd: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(OSError, match="No space left"):
        write_atomic(path, json.dumps({"status": "partial"}))
    assert json.loads(path.read_text()) == {"status": "ok", "guests": [1, 2]}
    assert [p.name for p in tmp_path.iterdir()] == ["results.json"]
