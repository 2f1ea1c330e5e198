"""The bench CLI into a test's own store (``bench_command``, ``bench_run``), and CIFAR-10 files whose batches
are not what their manifest vouches for (``cifar_with``)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from tests.support.helpers import REPO, bench_args


def bench_command(tmp_path: Path, *overrides: str, fresh_store: bool = False) -> list[str]:
    """bench_args' command line (a key ``overrides`` sets replaces bench_args' own: a run or cache dir)."""
    return bench_args(tmp_path, *overrides, fresh_store=fresh_store)[0]


def bench_run(tmp_path: Path, *overrides: str, timeout: float = 120, fresh_store: bool = False) ->\
        subprocess.CompletedProcess[str]:
    return subprocess.run(bench_command(tmp_path, *overrides, fresh_store=fresh_store), cwd=REPO, capture_output=True,
                          text=True, timeout=timeout,
                          env={**os.environ, "BENCH_DATA_ROOT": str(tmp_path / "no-real-data")})


def cifar_with(tmp_path: Path, name: str, payload: object | None = None, raw: bytes | None = None) -> Path:
    """Synthetic CIFAR-10 whose batch ``name`` holds ``payload`` (pickled) and whose manifest vouches for it."""
    import pickle

    from suites.data import cifar

    folder = cifar.synthesize(tmp_path, 50, 20) / cifar.FOLDER
    (folder / name).write_bytes(raw if raw is not None else pickle.dumps(payload, protocol=4))
    lines = [f"{cifar.md5(folder / n)}  {n}" for n in [*cifar.TRAIN, "test_batch", "batches.meta"]]
    (folder / cifar.MANIFEST).write_text("\n".join(lines) + "\n")
    return tmp_path


def _rows(n: int, width: int = 3072, dtype: str = "uint8") -> object:
    import numpy as np

    return np.zeros((n, width), dtype=dtype)
