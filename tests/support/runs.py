"""The bench CLI run as a user types it (``bench``), and two idle guests started and left running
(``start_idle_pair``)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.support import progress
from tests.support.helpers import REPO, SMOKE, bench_args, store_at


def bench(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The bench CLI as a user types it (flags and overrides in their order), into tmp's own store and cache."""
    own = [f"tracking_uri={store_at(tmp_path / 'mlflow.db')}", f"artifact_dir={tmp_path / 'artifacts'}",
           f"data.cache_dir={tmp_path / 'data'}"]
    return progress.run([sys.executable, "-m", "suites.commands.bench", *args, *own], watch=(tmp_path,), cwd=REPO,
                        env={**os.environ, "BENCH_DATA_ROOT": str(tmp_path / "none")})


def start_idle_pair(tmp_path: Path, *overrides: str) -> tuple[subprocess.Popen, Path, str]:
    """Two idle guests: silent until they end, so a broken pipe never stops them; only the runner's own
    mechanisms do."""
    args, run_dir, uri = bench_args(tmp_path, *SMOKE, "scenario=concurrent", "workload=idle", "workload.seconds=600",
                                  *overrides)
    proc = subprocess.Popen(args, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "BENCH_DATA_ROOT": str(tmp_path / "none"), "PYTHONUNBUFFERED": "1"})
    return proc, run_dir, uri
