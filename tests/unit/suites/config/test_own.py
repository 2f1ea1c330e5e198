"""Tests of ``suites/config/own.py``: a command's own settings, layered, checked, one error line."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest

from suites.config.own import load_own
from suites.errors import ConfigError, require


@dataclass
class Settings:
    count: int = 1
    out_dir: str = field(default="out", metadata={"path": True})

    def check(self) -> None:
        require(self.count >= 1, "mine.count", f"must be >= 1, got {self.count}")


def test_the_dotlist_goes_over_the_file_and_a_marked_path_is_made_absolute(tmp_path: Path,
                                                                            monkeypatch: pytest.MonkeyPatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "s.yaml").write_text("count: 2\n")
    s = load_own(Settings, "mine", ["count=3"], (tmp_path / "s.yaml",))
    assert s.count == 3 and s.out_dir == str(tmp_path / "out")
    assert load_own(Settings, "mine", [], (tmp_path / "s.yaml",)).count == 2


def test_a_bad_value_or_key_is_one_config_error_naming_what():
    with pytest.raises(ConfigError, match=r"mine.count: must be >= 1, got 0"):
        load_own(Settings, "mine", ["count=0"])
    with pytest.raises(ConfigError, match=r"^mine: "):
        load_own(Settings, "mine", ["colour=red"])
    with pytest.raises(ConfigError, match=r"^mine: "):
        load_own(Settings, "mine", ["count=many"])
