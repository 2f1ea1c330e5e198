"""Tests of ``suites/backends/vm/share.py``."""

from __future__ import annotations

from pathlib import Path

from suites.backends.vm import share
from suites.guest.protocol import GuestSpec
from tests.support.helpers import REPO


def test_a_vms_view_of_the_host_shares_links_and_folders_once_and_never_the_root(tmp_path: Path):
    (tmp_path / "data" / "mnist").mkdir(parents=True)
    (tmp_path / "trace.json").write_text("{}")
    (tmp_path / "link").symlink_to("data")
    binds, links = share.plan([tmp_path / "data", tmp_path / "data" / "mnist", tmp_path / "trace.json",
                               tmp_path / "link", tmp_path / "gone", Path("/")])
    assert binds == [tmp_path / "data", tmp_path / "trace.json"]  # mnist is in data; gone is not; / never
    assert links == [(tmp_path / "link", "data")]
    spec = GuestSpec("g0", "cpu", "mnist-torch", {"trace": str(tmp_path / "trace.json"), "lr": 0.1},
                     {"root": str(tmp_path / "data"), "cache_dir": "/no/such/folder"}, [0], [], None, 1024)
    wanted = share.wanted(spec, tmp_path / "run")
    assert {tmp_path / "trace.json", tmp_path / "data", tmp_path / "run", REPO}.issubset(wanted)
    assert Path("/no/such/folder") not in wanted and Path("/etc/shadow") not in wanted
    assert not any(p in (Path("/root"), Path("/home"), Path("/etc"), Path("/tmp")) for p in wanted)
