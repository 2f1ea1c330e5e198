"""Tests of ``suites/compare/history.py``: one figure over a machine's runs, a set-up change marked where it
happened."""

from __future__ import annotations

from pathlib import Path

import pytest

from suites.compare import history
from suites.compare.results import read
from suites.record.store_reader import StoreReader
from tests.support import compared_runs
from tests.support.helpers import store_at


@pytest.mark.heavy
def test_five_runs_with_a_driver_change_between_the_third_and_fourth(tmp_path: Path, monkeypatch):
    uri = store_at(tmp_path / "mlflow.db")
    store = StoreReader(uri)
    ids = [compared_runs.comparison(uri, {"cpu": [r, r + 1, r - 1]},
                                    {"host.driver_version": "550.1" if i < 3 else "580.2"})
           for i, r in enumerate((100.0, 101.0, 99.0, 90.0, 91.0))]
    runs = [read(store, store.run(i)) for i in reversed(ids)]  # newest first, as the store lists them
    points = history.history(runs, "cpu / mnist-torch images/s")
    assert [p.run.run.run_id for p in points] == ids  # oldest first
    assert [p.changed for p in points] == [[], [], [], ["host.driver_version: 550.1 → 580.2"], []]
    assert points[0].interval.median == 100.0 and points[0].interval.spread
    rows = history.history_rows(points)
    assert rows[0][5] == "(first)" and rows[1][5] == "-" and rows[3][5] == "host.driver_version: 550.1 → 580.2"
    from suites.render import plots

    drawn = []
    monkeypatch.setattr(history, "save", lambda fig, path, *_: drawn.append(plots.text_outside(fig)) or
                        plots.save(fig, path, "", ""))
    files = history.write_history(points, "cpu / mnist-torch images/s", tmp_path / "h")
    assert drawn == [[]]  # nothing drawn past the figure's edge
    assert [f.name for f in files] == ["history.md", "history.png"]
    assert "| host.driver_version: 550.1 → 580.2 |" in files[0].read_text()
    assert history.history(runs, "no such figure") == []
