"""Tests of ``suites/backends/leftovers.py``: a note per thing a run made, naming its maker; what a dead maker left
is an orphan, a live one's is not; a folder of a dead process's own goes before a new one is made."""

from __future__ import annotations

import os
from pathlib import Path

import psutil

from suites.backends.leftovers import Ledger, own_dir


def dead_pid() -> int:
    """A pid no process has (the highest free one below the kernel's limit)."""
    top = int(Path("/proc/sys/kernel/pid_max").read_text())
    return next(p for p in range(top - 1, 1, -1) if not psutil.pid_exists(p))


def test_a_dead_makers_note_is_an_orphan_and_a_live_ones_is_not(tmp_path: Path):
    ledger = Ledger("mdev", tmp_path)
    ledger.note("mine", path="/sys/x")
    (ledger.folder / "theirs").write_text(f'{{"pid": {dead_pid()}, "started": 1.0, "path": "/sys/y"}}')
    # this process's pid with another start time: a reused pid, another maker's note
    (ledger.folder / "reused").write_text(f'{{"pid": {os.getpid()}, "started": 1.0, "path": "/sys/z"}}')
    (ledger.folder / "garbled").write_text("{not json")
    assert [(k, f["path"]) for k, f in ledger.orphans()] == [("reused", "/sys/z"), ("theirs", "/sys/y")]
    ledger.forget("theirs")
    ledger.forget("reused")
    assert ledger.orphans() == [] and sorted(p.name for p in ledger.folder.iterdir()) == ["garbled", "mine"]


def test_a_new_own_folder_removes_those_of_processes_no_longer_running(tmp_path: Path):
    stale = tmp_path / f"gmb-x-{dead_pid()}-abc"
    stale.mkdir()
    live = tmp_path / f"gmb-x-{os.getpid()}-def"
    live.mkdir()
    made = own_dir("gmb-x-", tmp_path)
    assert made.is_dir() and made.name.startswith(f"gmb-x-{os.getpid()}-")
    assert not stale.exists() and live.exists()


def test_the_hosts_state_is_the_same_whatever_tmpdir_a_run_has(monkeypatch):
    """Hostile round: core locks lived under $TMPDIR, so two runs with different TMPDIRs (a scheduler sets one per
    job) never saw each other's leases."""
    import tempfile

    from suites.backends.leftovers import HOST_STATE, STATE_ENV, state_root

    monkeypatch.delenv(STATE_ENV, raising=False)
    monkeypatch.setattr(tempfile, "tempdir", "/var/tmp/job-42")
    assert state_root() == HOST_STATE == Path("/tmp/gpu-mixed-bench")


def test_a_note_that_is_no_regular_file_or_too_large_is_skipped_never_waited_on(tmp_path: Path):
    """Round 7: a FIFO note hung sync and every command that read the ledger; a link to /dev/zero grew to 14 GB in
    60 s. A note is read without following a link, never blocking, a regular file of at most MAX_NOTE bytes."""
    import time

    from suites.backends.leftovers import MAX_NOTE

    ledger = Ledger("records", tmp_path)
    (ledger.folder).mkdir(parents=True)
    (ledger.folder / "theirs").write_text(f'{{"pid": {dead_pid()}, "started": 1.0, "path": "/x"}}')
    os.mkfifo(ledger.folder / "fifo")
    (ledger.folder / "zero").symlink_to("/dev/zero")
    (ledger.folder / "link").symlink_to(ledger.folder / "theirs")
    (ledger.folder / "huge").write_text(" " * (MAX_NOTE + 1) + "{}")
    (ledger.folder / "list").write_text("[1, 2]")
    t0 = time.monotonic()
    assert [k for k, _ in ledger.orphans()] == ["theirs"]
    assert time.monotonic() - t0 < 5


def test_a_per_user_ledger_is_the_users_own_and_anothers_is_refused(tmp_path: Path):
    """Round 7: records/ was made 0755 by the first user, and a second user's bench died with a PermissionError
    traceback. Now the state root is 1777, each user's ledger its own 0700 folder; one another user made in its place
    is refused in one line, and read as holding nothing."""
    import stat

    import pytest

    from suites.backends.leftovers import LedgerError

    ledger = Ledger("records", tmp_path / "state", per_user=True)
    ledger.note("mine", what="run")
    assert ledger.folder.name == f"records-{os.geteuid()}"
    assert stat.S_IMODE(ledger.folder.stat().st_mode) == 0o700
    assert stat.S_IMODE(ledger.folder.parent.stat().st_mode) == 0o1777
    os.chmod(ledger.folder, 0o777)  # anyone may write notes into it now: not trusted
    with pytest.raises(LedgerError, match="not this user's own folder"):
        ledger.note("again", what="run")
    assert ledger.notes() == []
    if os.geteuid() == 0:  # as root here: a folder another user owns
        os.chmod(ledger.folder, 0o700)
        os.chown(ledger.folder, 65534, 65534)
        with pytest.raises(LedgerError, match="owner uid 65534"):
            ledger.note("again", what="run")
