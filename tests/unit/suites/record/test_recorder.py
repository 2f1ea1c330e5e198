"""Tests of ``suites/record/recorder.py``."""

from __future__ import annotations

from pathlib import Path

import pytest


def test_where_neither_the_run_folder_nor_the_rescue_folder_takes_the_results_the_figures_are_said(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    from suites.record import recorder as recorder_module
    from suites.record.recorder import Recorder
    from suites.render.tables import figures_line
    from tests.support.outcomes import outcome

    blocked = tmp_path / "a-file"
    blocked.write_text("")
    monkeypatch.setattr(recorder_module, "rescue_dir", lambda run_dir: blocked / "rescued")  # not makeable either
    said: list[str] = []
    recorder = Recorder.__new__(Recorder)
    recorder.say = said.append
    o = outcome(guests=2)
    o.guests[0].result.metrics = {"images_per_sec": 1234.5, "test_accuracy": 0.991}
    assert recorder.local(o, blocked / "run") is None
    assert "results.json could not be written in" in o.reasons[-1] and f"nor in {blocked}/" in o.reasons[-1]
    assert said == [f"warning: {o.reasons[-1]}"]
    assert figures_line(o).startswith("g0 cifar10-torch ok: images_per_sec=1234.5, test_accuracy=0.991; g1 ")
