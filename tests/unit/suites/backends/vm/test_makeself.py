"""Tests of ``suites/backends/vm/makeself.py``."""

from __future__ import annotations

from pathlib import Path

import pytest

from suites.backends.vm import makeself
from suites.errors import ConfigError
from tests.support.driver_runs import makeself_run


def test_a_payload_member_pointing_outside_its_folder_is_refused(tmp_path: Path):
    run = makeself_run(tmp_path, {"kernel-open/evil": b"->../../../outside"}, tmp_path / "ran")
    with pytest.raises(ConfigError, match="its payload could not be unpacked"):
        makeself.unpack(run, tmp_path / "grid")
    assert not (tmp_path / "outside").exists()
