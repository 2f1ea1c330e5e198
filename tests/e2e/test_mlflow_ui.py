"""The comparison UI: a real MLflow server, a real sweep logged over HTTP, the compare page in headless Chromium."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import urllib.request
from pathlib import Path

import pytest

from tests.support.helpers import REPO, SMOKE, free_port, start_server, stop

CHROMIUM = shutil.which("chromium")


SCREENSHOT = REPO / "outputs" / "test-artifacts" / "mlflow-compare.png"  # kept for a person to look at


RUNS_SCREENSHOT = REPO / "outputs" / "test-artifacts" / "mlflow-runs.png"


def chromium(*args: str) -> subprocess.CompletedProcess[str]:
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
             "--disable-dev-shm-usage", "--virtual-time-budget=20000", "--window-size=1400,900"]
    return subprocess.run([CHROMIUM, *flags, *args], capture_output=True, text=True, timeout=180)  # type: ignore[list-item]


def runs_page(base: str, exp: str, sweep_dir: Path) -> None:
    """The experiment's runs page: Duration of each bench run is its wall time (runs are logged after the fact,
    with their own start and end), and the experiment opens as model training, not GenAI."""
    with urllib.request.urlopen(f"{base}/api/2.0/mlflow/experiments/get?experiment_id={exp}", timeout=30) as r:
        tags = {t["key"]: t["value"] for t in json.loads(r.read())["experiment"]["tags"]}
    assert tags["mlflow.experimentKind"] == "custom_model_development"
    url = f"{base}/#/experiments/{exp}/runs"
    chromium(f"--screenshot={RUNS_SCREENSHOT}", url)
    assert RUNS_SCREENSHOT.exists() and RUNS_SCREENSHOT.stat().st_size > 20_000
    shown = [float(s) for s in re.findall(r">(\d+(?:\.\d+)?)s<", chromium("--dump-dom", url).stdout)]
    for job in ("0", "1"):
        doc = json.loads((sweep_dir / job / "results.json").read_text())
        wall = doc["ended_at"] - doc["started_at"]
        assert any(abs(d - wall) <= 0.1 * wall for d in shown), (wall, shown)  # not the old 84-293 ms


def rest(base: str, path: str, body: dict) -> dict:
    req = urllib.request.Request(f"{base}/api/2.0/mlflow/{path}", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.loads(r.read())


def test_make_ui_opens_the_store_named_by_uri():
    dry = subprocess.run(["make", "-n", "ui", "URI=sqlite:////tmp/x.db"], cwd=REPO, capture_output=True, text=True,
                         timeout=60).stdout
    assert "--backend-store-uri 'sqlite:////tmp/x.db'" in dry, dry


@pytest.mark.parametrize("switch, prefixed", [({}, True), ({"MLFLOW_DISABLE_TELEMETRY": "false"}, False),
                                              ({"DO_NOT_TRACK": "1"}, False)])
def test_make_ui_runs_without_mlflows_telemetry_unless_the_user_set_a_switch(switch: dict, prefixed: bool):
    env = {k: v for k, v in os.environ.items() if k not in ("MLFLOW_DISABLE_TELEMETRY", "DO_NOT_TRACK")}
    dry = subprocess.run(["make", "-n", "ui"], cwd=REPO, capture_output=True, text=True, timeout=60,
                         env={**env, **switch}).stdout
    assert ("MLFLOW_DISABLE_TELEMETRY=true " in dry) is prefixed, dry


@pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed (make setup-system installs it)")
def test_sweep_over_http_shows_up_in_the_compare_page(tmp_path: Path):
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    server = start_server(tmp_path, port)
    try:
        args = f"{' '.join(SMOKE)} tracking_uri={base} hydra.sweep.dir={tmp_path / 'sweep'}"
        proc = subprocess.run(["make", "-s", "bench", "-m", "profile=m60-1q,m60-8q", f"ARGS={args}"], cwd=REPO,
                              capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, proc.stderr[-2000:]
        assert "fallback" not in proc.stdout  # recorded over HTTP, not locally

        with urllib.request.urlopen(f"{base}/api/2.0/mlflow/experiments/get-by-name?experiment_name=gpu-mixed-bench",
                                    timeout=30) as r:
            exp = json.loads(r.read())["experiment"]["experiment_id"]
        runs = rest(base, "runs/search", {"experiment_ids": [exp],
                                          "filter": "tags.`bench.role` = 'scenario'"})["runs"]
        by_profile = {next(p["value"] for p in r["data"]["params"] if p["key"] == "profile"): r for r in runs}
        assert sorted(by_profile) == ["m60-1q", "m60-8q"]
        ids = [by_profile[p]["info"]["run_id"] for p in ("m60-1q", "m60-8q")]

        url = f"{base}/#/compare-runs?runs={json.dumps(ids)}&experiments={json.dumps([exp])}".replace(" ", "")
        SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
        shot = chromium(f"--screenshot={SCREENSHOT}", url)
        assert SCREENSHOT.exists() and SCREENSHOT.stat().st_size > 20_000, shot.stderr[-1000:]
        dom = chromium("--dump-dom", url).stdout  # the page after its scripts fetched the runs
        assert "Comparing 2 Runs" in dom
        assert all(run_id[:20] in dom for run_id in ids)  # both runs' columns
        assert "images_per_sec" in dom and "m60-1q" in dom and "m60-8q" in dom  # their params and metrics
        runs_page(base, exp, tmp_path / "sweep")
    finally:
        stop(server)
