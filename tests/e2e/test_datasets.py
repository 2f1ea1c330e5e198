"""Dataset files that are not what they claim are one line before a guest starts (suites/data/cifar.py)."""

from __future__ import annotations

from pathlib import Path

from tests.support.cifar_files import _rows, bench_run, cifar_with
from tests.support.helpers import SMOKE, one_error_line


def test_a_garbage_manifest_or_a_directory_batch_is_one_line(tmp_path: Path):
    from suites.data import cifar

    root = cifar_with(tmp_path / "data", "test_batch", {b"data": _rows(2), b"labels": [1, 2]})
    (root / cifar.FOLDER / cifar.MANIFEST).write_text("garbage\n")
    proc = bench_run(tmp_path, "workload=cifar10-torch", *SMOKE, f"data.root={root}")
    assert "not a checksum manifest" in one_error_line(proc)
    cifar_with(tmp_path / "data", "test_batch", {b"data": _rows(2), b"labels": [1, 2]})
    (root / cifar.FOLDER / "test_batch").unlink()
    (root / cifar.FOLDER / "test_batch").mkdir()
    proc = bench_run(tmp_path, "workload=cifar10-torch", *SMOKE, f"data.root={root}")
    assert "test_batch is a directory, not a regular file" in one_error_line(proc)
    assert not (tmp_path / "run").exists()
