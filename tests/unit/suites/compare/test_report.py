"""Tests of ``suites/compare/report.py``: the comparison as rows, Markdown, HTML and its plot."""

from __future__ import annotations

from pathlib import Path

import pytest

from suites.compare import conclude
from suites.compare.results import read
from suites.compare.settings import Gate
from suites.record.store_reader import StoreReader
from suites.render.plots import text_outside
from tests.support import compared_runs
from tests.support.helpers import store_at


@pytest.mark.heavy
def test_the_report_says_the_set_up_change_the_verdicts_and_the_gate(tmp_path: Path, monkeypatch):
    from suites.compare import report

    uri = store_at(tmp_path / "mlflow.db")
    store = StoreReader(uri)
    a = read(store, store.run(compared_runs.comparison(uri, {"cpu": [100.0, 101.0, 99.0]}, {"workload.step_ms": "5"})))
    b = read(store, store.run(compared_runs.comparison(uri, {"cpu": [83.0, 84.0, 82.0]}, {"workload.step_ms": "6"})))
    comp = conclude.compare(a, b, 5.0, Gate("slower", 5.0))
    drawn = []
    monkeypatch.setattr(report, "save", lambda fig, path, *_: drawn.append(text_outside(fig)) or path)
    files = report.write(comp, tmp_path / "out")
    assert [f.name for f in files] == ["compare.md", "compare.html", "compare.png"] and drawn == [[]]
    md = (tmp_path / "out" / "compare.md").read_text()
    assert "| config | workload.step_ms | 5 | 6 |" in md
    assert "| cpu / mnist-torch images/s | 100 (3) | 83 (3) | 0.830 [" in md and "| slower |" in md
    assert "## Gate --fail-on slower:5" in md and "failed: cpu / mnist-torch images/s slower by" in md
    assert "<table>" in (tmp_path / "out" / "compare.html").read_text()


def test_the_same_set_up_says_so(tmp_path: Path):
    from suites.compare import report

    uri = store_at(tmp_path / "mlflow.db")
    store = StoreReader(uri)
    a, b = (read(store, store.run(compared_runs.bench(uri, r))) for r in (100.0, 101.0))
    comp = conclude.compare(a, b, 5.0, None)
    md = report.markdown(comp, [])
    assert "## Set-up\n\nsame set-up\n" in md and "| mnist-torch images/s | 100 (1) | 101 (1) | 1.010 (no spread) " \
        "| no spread |" in md and "## Gate" not in md
