"""Credentials in a tracking URI never reach params, tags, artifacts, config files, logs or the console."""

from __future__ import annotations

from pathlib import Path

from tests.support.helpers import SMOKE, bench_args, free_port, mlflow_client

SECRETS = ("S3cretPW", "tok3n-abc")


def test_credentials_in_tracking_uri_are_never_recorded_or_printed(tmp_path: Path):
    import os
    import subprocess

    from tests.support.helpers import REPO

    uri = f"http://alice:S3cretPW@127.0.0.1:{free_port()}/?token=tok3n-abc"  # nothing listens: the run falls back
    fallback = f"sqlite:///{tmp_path / 'fallback.db'}"
    args, run_dir, _ = bench_args(tmp_path, *SMOKE, f"fallback_tracking_uri={fallback}")
    args = [f"tracking_uri='{uri}'" if a.startswith("tracking_uri=") else a for a in args]  # quoted: it holds '='
    proc = subprocess.run(args, cwd=REPO, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "BENCH_DATA_ROOT": str(tmp_path / "none")})
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "recording to the fallback store" in proc.stdout and "http://***@127.0.0.1" in proc.stdout
    seen = {"console": proc.stdout + proc.stderr}
    seen.update({str(p): p.read_text(errors="replace") for p in run_dir.rglob("*") if p.is_file()
                 and p.suffix in (".yaml", ".json", ".log", ".csv")})
    client = mlflow_client(fallback)
    for run in client.search_runs([client.get_experiment_by_name("gpu-mixed-bench").experiment_id]):
        seen[run.info.run_id] = repr(run.data.params) + repr(run.data.tags)
    assert len(seen) > 5 and any("config.yaml" in k for k in seen) and any(".hydra" in k for k in seen)
    leaks = [where for where, text in seen.items() for s in SECRETS if s in text]
    assert leaks == [], leaks
