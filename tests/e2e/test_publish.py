"""``make publish``, ``make check-results``, ``make catalog``, ``make compare A=<bundle>`` and ``make rerun`` on real
runs of this host: a full-size comparison passes every run rule this host can meet (not the profile's: no GPU), a
smoke mixed run and a smoke sizing are not compliant for the rules that say so, a bundle edited by hand does not
recompute, the catalog renders in a real headless browser with every figure and interval and runs no script a bundle
brings, a bundle compares with a run as two runs do."""

from __future__ import annotations

import csv
import io
import json
import re
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path
from typing import Any

import pytest

from gpu_probe.inventory import git_sha
from suites.bundle import read
from tests.support import progress
from tests.support.helpers import REPO, SMOKE, STAND_IN_ML, bench_args, run_bench, store_at

CHROMIUM = shutil.which("chromium")
SCREENSHOT = REPO / "outputs" / "test-artifacts" / "catalog.png"  # kept for a person to look at
FULL = ["scenario=gpu-vs-cpu", "workload=fixed-step", "scenario.repeats=3", "workload.min_window_s=1", "progress=quiet"]
# the mixed run and the sizing: bundles of their kinds, judged by their rules (smoke, one repeat, no GPU), not by their
# training: the ML guest is the 1 ms stand-in
MIXED = [*SMOKE, "scenario=mixed", "profile=m60-8q", "profile.memory_MiB=2048", "scenario.repeats=1",
         "scenario.mixed.cad.overrides=['workload.frames_per_test=6','workload.viewsets=[product]']", *STAND_IN_ML]


def suites(*argv: str, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "suites", *argv], cwd=cwd, capture_output=True, text=True,
                          timeout=300)


@pytest.fixture(scope="module")
def published(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One store holding a full-size comparison, a smoke mixed run and a smoke sizing; each published."""
    tmp = tmp_path_factory.mktemp("publish")
    uri = store_at(tmp / "mlflow.db")
    args, full_dir, _ = bench_args(tmp / "full", *FULL, f"tracking_uri={uri}", "host_busy_pct=100000")
    args[1:3] = ["-m", "suites", "bench"]  # as make bench runs it: the command the bundle records, and a rerun runs
    full = progress.run(args, watch=(tmp / "full",), cwd=REPO)
    mixed = run_bench(tmp / "mixed", *MIXED, f"tracking_uri={uri}")
    assert full.returncode == 0 and mixed.proc.returncode == 0, full.stderr[-2000:] + mixed.proc.stderr
    size = suites("size", "sizing.max_guests=1", "sizing.repeats=1", "sizing.tier=smoke", "progress=quiet",
                  *STAND_IN_ML, f"tracking_uri={uri}", f"artifact_dir={tmp / 'art'}", f"data.cache_dir={tmp / 'data'}",
                  f"sizing.out_dir={tmp / 'sizing'}")
    assert size.returncode == 0, size.stdout[-2000:] + size.stderr[-2000:]
    out: dict[str, Any] = {"tmp": tmp, "uri": uri, "full_run": full_dir}
    made = subprocess.run(["make", "--no-print-directory", "publish", f"RUN={full_dir}",
                           f"ARGS=--tracking-uri {uri} --out {tmp / 'bundles'}"], cwd=REPO, capture_output=True,
                          text=True, timeout=300)  # as a user types it
    assert made.returncode == 0, made.stdout + made.stderr
    for given in (str(mixed.run_dir), next((tmp / "sizing").iterdir()).as_posix()):
        done = suites("publish", given, "--tracking-uri", uri, "--out", str(tmp / "bundles"))
        assert done.returncode == 0, done.stdout + done.stderr
    titles = {p: read(p).title for p in (tmp / "bundles").iterdir()}
    out["comparison"] = next(p for p, t in titles.items() if t.startswith("comparison gpu-vs-cpu"))
    out["mixed"] = next(p for p, t in titles.items() if t.startswith("comparison mixed"))
    out["sizing"] = next(p for p, t in titles.items() if t.startswith("sizing"))
    return out


def failing(path: Path) -> set[str]:
    return {r["rule"] for r in read(path).doc["compliance"]["rules"] if r["ok"] is False}


@pytest.mark.slow(minutes=2)  # the module's fixture: three runs of this host; its module goes first (tests/conftest.py)
def test_a_full_size_comparison_passes_every_rule_this_host_can_meet(published):
    doc = read(published["comparison"]).doc
    dirty = git_sha(REPO).endswith("-dirty")  # a working tree with changes: its code is no commit's
    assert failing(published["comparison"]) == {"profile enforced"} | ({"unmodified suite"} if dirty else set())
    fig = next(f for f in doc["figures"] if f["name"] == "cpu / fixed-step images/s")
    assert len(fig["values"]) == 3 and fig["summary"]["n"] == 3 and fig["summary"]["low"] < fig["summary"]["high"]
    assert doc["system"]["enforcement"] == "not enforced" and doc["plots"]
    assert doc["command"].startswith("python -m suites bench scenario=gpu-vs-cpu workload=fixed-step")
    text = published["comparison"].read_bytes()
    raw = tarfile.open(fileobj=io.BytesIO(text)).extractfile("bundle.json").read().decode()
    assert str(published["tmp"]) not in raw and "mlflow.db" not in raw  # no local path leaves with it
    # one figure, one number (round 7: comparison.csv said 0.995 [0.705, 1.275], the bundle 1x [0.716, 1.26]): the
    # bundle's ratio is the comparison run's own, to the last digit MLflow keeps
    from mlflow.tracking import MlflowClient

    metrics = MlflowClient(published["uri"]).get_run(doc["run"]["id"]).data.metrics
    [ratio] = [r for r in doc["ratios"] if r["name"] == "gpu-vs-cpu: cpu vs 1-gpu: fixed-step images/s"]
    got = [ratio["summary"][k] for k in ("median", "low", "high")]
    assert got == pytest.approx([metrics[f"cpu.{k}"] for k in ("throughput_x", "throughput_x.ci_low",
                                                                "throughput_x.ci_high")], rel=1e-9)


def test_a_smoke_mixed_run_and_a_smoke_sizing_are_not_compliant_for_the_rules_that_say_so(published):
    mixed, sizing = failing(published["mixed"]), failing(published["sizing"])
    assert {"full size", "profile enforced", "repeats"} <= mixed and "figures recompute" not in mixed
    assert {"full size", "conclusive answer", "profile enforced"} <= sizing and "figures recompute" not in sizing
    done = suites("check-results", str(published["sizing"]))
    assert done.returncode == 1 and "verdict: not compliant: " in done.stdout


def test_a_bundle_whose_figure_was_edited_fails_the_recompute_rule(published, tmp_path: Path):
    bundle = read(published["comparison"])
    fig = bundle.doc["figures"][0]
    fig["summary"]["median"] *= 1.5  # a better figure, by hand
    (tmp_path / "edited.json").write_text(json.dumps(bundle.doc))
    done = suites("check-results", str(tmp_path / "edited.json"))
    assert done.returncode == 1, done.stdout + done.stderr
    said = r"figures recompute\s+FAILS\s+do not recompute from the bundle's raw repeats: "
    assert re.search(said + re.escape(fig["name"]), done.stdout), done.stdout


@pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed (make setup-system installs it)")
def test_the_catalog_renders_every_bundle_beside_the_reference_and_runs_no_script_a_bundle_brings(published, tmp_path):
    folder = tmp_path / "in"
    folder.mkdir()
    for key in ("comparison", "mixed", "sizing"):
        shutil.copy(published[key], folder)
    evil = read(published["comparison"]).doc
    evil["title"] = "<script>document.title='pwned'</script><img src=x onerror=\"document.title='pwned'\">"
    (folder / "evil.json").write_text(json.dumps(evil))
    made = subprocess.run(["make", "--no-print-directory", "catalog", f"DIR={folder}",
                           f"ARGS=--out {tmp_path / 'site'}"], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert made.returncode == 0 and "5 bundle(s)" in made.stdout, made.stdout + made.stderr
    url = (tmp_path / "site" / "index.html").as_uri()
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1400,2400",
             "--virtual-time-budget=5000"]
    dom = subprocess.run([CHROMIUM, *flags, "--dump-dom", url], capture_output=True, text=True, timeout=180).stdout
    SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run([CHROMIUM, *flags, f"--screenshot={SCREENSHOT}", url], capture_output=True, timeout=180)
    assert "<title>gpu-mixed-bench results (5)</title>" in dom and "pwned</title>" not in dom  # no script ran
    doc = read(published["comparison"]).doc
    for fig in doc["figures"]:  # every figure, its interval and n, as the page shows it to a reader
        shown = r" \([^)]*\)</td>(<td></td>)*<td>[\d.,]+ \[[\d.,]+, [\d.,]+\] <span class=\"n\">n=3</span>"
        assert re.search(re.escape(fig["name"]) + shown, dom), fig["name"]
    assert "10.06x: MNIST train time 10.06x without GPU" in dom and "(published)" in dom
    assert "not compliant (shown apart" in dom and "(not compliant)</th>" in dom
    assert SCREENSHOT.stat().st_size > 10_000


def test_a_bundle_and_the_run_it_was_published_from_are_one_run_and_its_command_reruns(published):
    """Round 7: `compare X X` (a bundle beside the run it holds, or one run by its id and its folder) called a run
    and itself independent and suggested 14 repeats. It is one line, exit 2 (a bundle beside another run: the rerun's
    test below)."""
    uri = published["uri"]
    done = suites("compare", str(published["comparison"]), str(published["full_run"]), "--tracking-uri", uri,
                  "--out", str(published["tmp"] / "compare"), "--no-record")
    assert done.returncode == 2 and done.stdout == "", done.stdout + done.stderr
    assert done.stderr.startswith("error: A (") and ") are the same run " in done.stderr
    assert done.stderr.count("\n") == 1 and not (published["tmp"] / "compare").exists()
    rerun = suites("rerun", str(published["comparison"]), "--print")
    said = rerun.stdout.splitlines()
    assert rerun.returncode == 0 and said[-1].startswith("rerun: python -m suites bench scenario=gpu-vs-cpu")
    assert "rerun: tracking_uri left out of the bundle (it named a place on its host): this host's default" in said
    assert str(published["tmp"]) not in rerun.stdout


def test_make_rerun_runs_the_bundles_command_here_and_compare_reads_the_bundle_beside_the_new_run(published):
    """docs/results.md's check of a published result, as its user runs it: ``make rerun BUNDLE=`` runs the bundle's
    own command on this host into this host's store (where to: settings after the bundle's), then ``make compare
    A=<bundle> B=<the new run>`` sets the bundle's figures beside the new ones."""
    tmp, uri = published["tmp"], published["uri"]
    command = read(published["comparison"]).doc["command"].split("  # ", 1)[0]
    here = f"tracking_uri={uri} hydra.run.dir={tmp / 'rerun'}"
    done = subprocess.run(["make", "--no-print-directory", "rerun", f"BUNDLE={published['comparison']}",
                           f"ARGS={here}"], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert f"rerun: {command} {here}" in done.stdout.splitlines(), done.stdout[:600]  # said, then run
    with (tmp / "rerun" / "comparison.csv").open() as f:  # the run the bundle's command made, here, with n = 3
        ran = [(r["label"], r["status"], r["n"]) for r in csv.DictReader(f)]
    assert ran == [("1-gpu", "ok", "3"), ("cpu", "ok", "3")], ran
    compared = subprocess.run(["make", "--no-print-directory", "compare", f"A={published['comparison']}",
                               f"B={tmp / 'rerun'}", f"ARGS=--tracking-uri {uri} --out {tmp / 'rerun-compare'} "
                               "--no-record"], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert compared.returncode == 0, compared.stdout[-2000:] + compared.stderr[-2000:]
    said = " ".join(compared.stdout.split())
    assert "compare: A = bundle " in said and "figures: B / A" in said
    row = next(ln for ln in compared.stdout.splitlines() if "cpu / fixed-step images/s" in ln)
    assert re.search(r"\d\.\d\d", row), row  # a ratio: the bundle's 3 repeats against the rerun's 3
