"""Nothing measured is lost (suites/record/rundir.py): a disk that fills during a run leaves every figure said and
the last whole file in place."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from suites.render.tables import unfold
from tests.support.helpers import REPO


@pytest.fixture
def small_disk(tmp_path: Path):
    """A 24 MiB tmpfs of this test's own (the suite's tests run as root on hosts of this kind)."""
    disk = tmp_path / "disk"
    disk.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=24m", "tmpfs", str(disk)], check=True, capture_output=True)
    try:
        yield disk
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False, capture_output=True)


def fill(disk: Path) -> None:
    """Every byte of ``disk`` taken (the write that finds it full ends the filling)."""
    try:
        with (disk / "filler").open("wb") as f:
            while True:
                f.write(b"\0" * 2**20)
    except OSError:
        pass


def test_a_disk_that_fills_during_a_run_loses_no_measurement(tmp_path: Path, small_disk: Path):
    """The free-space check runs at the start only: a disk full by the end must not be an ENOSPC traceback with
    no results.json and no MLflow run while the figures are in memory."""
    import os
    import time

    from tests.support.helpers import SMOKE, bench_args

    args, run_dir, uri = bench_args(tmp_path, *SMOKE, "workload=idle", "workload.seconds=3",
                                    f"hydra.run.dir={small_disk / 'run'}")
    env = {**os.environ, "TMPDIR": str(tmp_path / "tmp")}
    (tmp_path / "tmp").mkdir()
    proc = subprocess.Popen(args, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    deadline = time.monotonic() + 120
    while not (small_disk / "run" / "g0.log").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    fill(small_disk)
    out, err = proc.communicate(timeout=300)
    assert "Traceback" not in out + err, err[-3000:]
    rescued = list((tmp_path / "tmp").glob("gpu-mixed-bench-rescued/*/results.json"))
    assert len(rescued) == 1, out + err
    results = json.loads(rescued[0].read_text())
    assert results["guests"][0]["result"]["status"] == "ok"
    assert any("No space left on device" in r and str(rescued[0].parent) in r for r in results["reasons"])
    assert f"results.json could not be written in {small_disk / 'run'} (No space left on device); kept in " \
        f"{rescued[0].parent}" in unfold(out)  # as said, its lines folded at 120 columns read whole
    from mlflow.tracking import MlflowClient

    client = MlflowClient(uri)
    runs = client.search_runs([e.experiment_id for e in client.search_experiments()],
                              "tags.`bench.role` != 'guest'")
    assert len(runs) == 1 and "No space left on device" in runs[0].data.tags["bench.failure"]
    assert "results.json" in {a.path for a in client.list_artifacts(runs[0].info.run_id)}


def test_a_store_whose_disk_fills_during_a_run_is_a_warning_never_a_traceback(tmp_path: Path, small_disk: Path):
    """Hostile round: the disk holding the sqlite store filled mid-run; the result was kept but SQLAlchemy's
    tracebacks were printed. The store's failure is one warning line; results.json and the figures stay."""
    import os
    import time

    from tests.support.helpers import SMOKE, bench_args, store_at

    uri = store_at(small_disk / "mlflow.db")
    args, run_dir, _ = bench_args(tmp_path, *SMOKE, "workload=idle", "workload.seconds=3", f"tracking_uri={uri}",
                                  f"fallback_tracking_uri={uri}", f"artifact_dir={small_disk / 'art'}")
    proc = subprocess.Popen(args, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "BENCH_DATA_ROOT": str(tmp_path / "none")})
    deadline = time.monotonic() + 120
    while not (run_dir / "g0.log").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    fill(small_disk)
    out, err = proc.communicate(timeout=300)
    assert "Traceback" not in out + err, (out + err)[-3000:]
    assert json.loads((run_dir / "results.json").read_text())["guests"][0]["result"]["status"] == "ok"
    said = unfold(out + err)
    assert "warning: MLflow recording failed (" in said and f"results kept in {run_dir}" in said, said[-3000:]
    assert "raised as a result of" not in said  # the error itself, not how SQLAlchemy raised it
