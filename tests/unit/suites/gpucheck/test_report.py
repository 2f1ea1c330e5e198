"""Tests of ``suites/gpucheck/report.py``: the summary (json, md) holds every row and each check's seconds, the
device file is written only where a GPU measured something, the console's table folds a result many rows share and
drops empty columns where nothing ran, and the tarball holds the folder."""

from __future__ import annotations

import io
import json
import tarfile
import time
from pathlib import Path

from rich.console import Console

from gpu_probe.inventory import collect
from suites.gpucheck.campaign import GpuCheck
from suites.gpucheck.checks import Context, Row
from suites.gpucheck.device_clock import CheckClock
from suites.gpucheck.report import pack, table, write_summary


def shown(rows: list[Row]) -> str:
    text = io.StringIO()
    Console(file=text, width=120).print(table(rows, "gpu-check"))
    return text.getvalue()


def test_the_summary_holds_every_row_and_its_seconds_and_no_device_file_without_a_gpu(tmp_path: Path):
    ctx = Context(tmp_path / "gc", collect(), None, time.monotonic() + 60, [].append)
    gc = GpuCheck(ctx, ["a", "b1"], {"a": 1.0, "b1": 20.0}, measured=False, seconds={"a": 0.4},
                  clocks={"a": CheckClock(0.4, 0.1, 1, 0.2)}, shares={"a": 520.0})
    rows = [Row("a", "ok", "1 GPU", "a GPU"), Row("b1", "skipped: no GPU")]
    files = write_summary(gc, rows, 3.2)
    assert [f.name for f in files] == ["summary.json", "summary.md"]  # a CPU host measured nothing of a GPU
    summary = json.loads(files[0].read_text())
    assert [r["check"] for r in summary["rows"]] == ["a", "b1"] and summary["check_s"] == {"a": 0.4}
    assert summary["estimates"] == {"check_s": {"a": 1.0, "b1": 20.0}, "measured": False, "shares_s": {"a": 520.0}}
    assert summary["harness_s"] == {"a": {"wall_s": 0.4, "work_s": 0.1, "harness_s": 0.3, "runs": 1,
                                          "first_window_s": 0.2}}  # what the harness cost around a's work
    md = files[1].read_text().splitlines()
    assert any(ln.startswith("| a inventory") and "| ok | 1 GPU |" in ln and ln.endswith("| 0.4 | 0.1 | 0.3 |")
               for ln in md)
    assert any(ln.startswith("| b1 ") and "| skipped: no GPU |  |" in ln and ln.endswith("|  |  |  |") for ln in md)


def test_a_result_every_row_shares_is_said_once_under_the_table_and_nothing_ran_shows_no_figure_column():
    rows = [Row(c, "skipped: no GPU (NVML: driver not loaded)") for c in ("a", "b1", "c1")]
    text = shown(rows)
    assert text.count("NVML: driver not loaded") == 1 and "figure" not in text
    ran = shown([Row("a", "ok", "1 GPU", "a GPU"), Row("b1", "failed: 3 ms", "3 ms", "< 2 ms")])
    assert "figure" in ran and "expected" in ran and "failed: 3 ms" in ran


def test_the_tarball_holds_the_folder_but_not_itself(tmp_path: Path):
    root = tmp_path / "20261129-000000"
    (root / "logs").mkdir(parents=True)
    (root / "summary.md").write_text("# x\n")
    (root / "logs" / "a.log").write_text("a\n")
    tarball = pack(root)
    with tarfile.open(tarball) as tar:
        names = sorted(tar.getnames())
    assert names == [f"{root.name}/logs", f"{root.name}/logs/a.log", f"{root.name}/summary.md"]
