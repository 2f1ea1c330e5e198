"""Tests of ``suites/config/own.py``: a command's own settings, layered, checked, one error line."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest

from suites.config.own import load_own
from suites.errors import ConfigError, require


@dataclass(frozen=True)
class Inner:
    cores: int = 1


@dataclass(frozen=True)
class Settings:
    count: int = 1
    out_dir: str = field(default="out", metadata={"path": True})
    inner: Inner = field(default_factory=Inner)
    names: list[str] = field(default_factory=lambda: ["a"])

    def check(self) -> Settings:
        require(self.count >= 1, "mine.count", f"must be >= 1, got {self.count}")
        return self


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


def test_a_frozen_settings_class_and_the_frozen_ones_it_holds_take_every_layer_and_stay_frozen():
    """OmegaConf makes a frozen dataclass's schema read-only, down to each frozen dataclass it holds: merged as it
    was, a layer that set ``inner.cores`` was refused as a read-only node."""
    import dataclasses

    s = load_own(Settings, "mine", ["inner.cores=4", "names=[b,c]", "count=2"])
    assert (s.inner.cores, s.names, s.count) == (4, ["b", "c"], 2)
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.count = 5  # type: ignore[misc]
    with pytest.raises(ConfigError, match=r"^mine: .*inner.cores"):
        load_own(Settings, "mine", ["inner.cores=many"])  # the schema's types still hold
