"""Tests of ``suites/compare/settings.py``: make compare's command line read into its settings, a bad one refused as
one ConfigError before any store is opened (the command's exit 2 and nothing written: test_command.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpu_probe.stats import NOISE_PCT
from suites.compare.settings import CompareSettings, Gate, parse
from suites.errors import ConfigError


def test_two_runs_with_the_defaults_the_noise_band_being_the_statistics_own(tmp_path: Path):
    s = parse(["a", "b", "--out", str(tmp_path / "o")])
    assert s == CompareSettings(["a", "b"], None, None, None, NOISE_PCT, s.tracking_uri, s.experiment,
                                str(tmp_path / "o"), True)


def test_latest_history_and_the_gate_read_as_settings(tmp_path: Path):
    out = ["--out", str(tmp_path / "o")]
    assert parse(["--latest", *out]).latest == "" and parse(["--latest", "study", *out]).latest == "study"
    assert parse(["--history", "cpu / x", *out]).history == "cpu / x"
    s = parse(["a", "b", "--fail-on", "slower:7", "--noise", "2", "--no-record", *out])
    assert (s.gate, s.noise_pct, s.record) == (Gate("slower", 7.0), 2.0, False)


@pytest.mark.parametrize(("argv", "said"), [
    (["a", "b", "c"], "give two runs (A B)"), (["a", "b", "--noise", "100"], "--noise 100: a band in"),
    (["a", "b", "--fail-on", "slower:x"], "--fail-on"), (["--latest", "--history", "f"], "--history FIGURE reads"),
])
def test_each_refusal_is_one_config_error(tmp_path: Path, argv: list[str], said: str):
    with pytest.raises(ConfigError, match=said.replace("(", r"\(").replace(")", r"\)")):
        parse([*argv, "--out", str(tmp_path / "o")])
