"""The mixed-workload study: derived figures, QoS scoring, and the report read back from MLflow."""

from __future__ import annotations

from pathlib import Path

import pytest

from suites.commands import report as report_cli
from suites.record import reader
from suites.render.tables import unfold
from suites.run.mixed import mixed_verdict
from tests.support.helpers import REPO, STAND_IN_ML, over_width, run_bench

SMALL = ["progress=quiet", "scenario.mixed.cad.overrides=['workload.frames_per_test=10']",
         "scenario.mixed.ml.overrides=['workload.train_limit=2048','workload.width=8','workload.target_accuracy=null',"
         "'workload.until_stopped=true','workload.min_window_s=0.5','workload.warmup_steps=3']",
         "profile.memory_MiB=2048",
         "scenario.repeats=1"]


def _runs(uri: str):
    import mlflow

    mlflow.set_tracking_uri(uri)
    return mlflow.search_runs(experiment_names=["gpu-mixed-bench"])


def _notebook_shows(uri: str, tmp_path: Path, text: str) -> None:
    """Execute the report notebook headless against this store; its output must hold the report's numbers."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(REPO / "notebooks" / "consolidation_report.ipynb", as_version=4)
    params = next(c for c in nb.cells if "parameters" in c.metadata.get("tags", []))
    params.source = f"TRACKING_URI = {uri!r}\nEXPERIMENT = 'gpu-mixed-bench'\nOUT = {str(tmp_path / 'nb')!r}"
    NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    shown = "".join(str(o.get("data", {}).get("text/markdown", "")) + str(o.get("data", {}).get("text/plain", ""))
                    for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []))
    assert "m60-8q" in shown and text in shown
    assert (tmp_path / "nb" / "report.html").exists()


def test_mixed_runs_three_phases_and_the_report_equals_the_store(tmp_path: Path, capsys):
    run = run_bench(tmp_path, "scenario=mixed", "profile=m60-8q", *SMALL)
    assert run.proc.returncode == 0, run.proc.stderr[-3000:]
    df = _runs(run.tracking_uri)
    comparison = df[df["tags.bench.role"] == "comparison"].iloc[0]
    phases = df[df["tags.mlflow.parentRunId"] == comparison["run_id"]].set_index("tags.bench.phase")
    assert sorted(phases.index) == ["m60-8q/cad", "m60-8q/mixed", "m60-8q/ml"]
    guests = df[df["tags.bench.role"] == "guest"]

    def guest(phase: str, workload: str):
        rows = guests[(guests["tags.mlflow.parentRunId"] == phases.loc[phase, "run_id"])
                      & (guests["params.workload"] == workload)]
        assert len(rows) == 1
        return rows.iloc[0]

    out = run.proc.stdout
    assert "NOT A GPU MEASUREMENT: every phase" in out and "x baseline" not in out  # no ratio of unlike things
    assert "[95% CI]" in out and "verdict" in out and "reference study" in out and "(2 x M60)" in out
    cad_alone, cad_mixed = guest("m60-8q/cad", "graphics-replay"), guest("m60-8q/mixed", "graphics-replay")
    ml_alone, ml_mixed = guest("m60-8q/ml", "mnist-torch"), guest("m60-8q/mixed", "mnist-torch")
    assert cad_mixed["metrics.frames"] > 0 and ml_mixed["metrics.images"] > 0  # real rendering, real training
    assert cad_mixed["metrics.pixels_ok"] == 1.0
    assert phases.loc["m60-8q/mixed", "metrics.overlap_pct"] > 0  # recorded (>= 90 %: tests/test_sizing.py)

    rep = reader.build(run.tracking_uri)
    r = rep.mixed["m60-8q"]
    expected = {
        "cad_run_time_increase_pct": (cad_mixed["metrics.run_time_s"] / cad_alone["metrics.run_time_s"] - 1) * 100,
        # time per image: the ML guest is sized by time, so its rates, not its train times, are compared
        "ml_train_time_increase_pct": (ml_alone["metrics.images_per_sec"] / ml_mixed["metrics.images_per_sec"] - 1)
        * 100,
        "concurrent_s": phases.loc["m60-8q/mixed", "metrics.makespan_s"],
        # ML alone's makespan scaled to the images it trained beside CAD: the same work one after the other
        "sequential_s": phases.loc["m60-8q/cad", "metrics.makespan_s"] + phases.loc["m60-8q/ml", "metrics.makespan_s"]
        * ml_mixed["metrics.images"] / ml_alone["metrics.images"],
        "overlap_pct": phases.loc["m60-8q/mixed", "metrics.overlap_pct"],
        "mixed.host_cpu_pct": phases.loc["m60-8q/mixed", "metrics.host_cpu_pct.mean"],
        "cad_p95_frame_ms_mixed": cad_mixed["metrics.frame_time_ms.p95"],
    }
    for key, value in expected.items():
        assert r[key] == pytest.approx(value, rel=1e-9), key
        assert comparison[f"metrics.m60-8q.{key}"] == pytest.approx(value, rel=1e-9), key  # what the runner logged

    from mlflow.tracking import MlflowClient

    logged = {f.path for f in MlflowClient(run.tracking_uri).list_artifacts(comparison["run_id"], "report")}
    assert {"report/report.md", "report/report.html", "report/slowdown.png", "report/sequential_vs_concurrent.png",
            "report/cpu_utilisation.png"} <= logged
    assert "report/consolidation.png" not in logged  # the run's own report holds only the run
    out = tmp_path / "report"
    capsys.readouterr()
    assert report_cli.main(["--tracking-uri", run.tracking_uri, "--out", str(out)]) == 0
    printed = capsys.readouterr().out  # a summary within 120 columns and the path, not the whole Markdown
    assert "|---|" not in printed and over_width(printed) == [] and str(out / "report.html") in printed
    assert "mixed CAD + ML, per profile: the verdict" in printed
    md = (out / "report.md").read_text()
    assert f"| m60-8q | {r['cad_run_time_increase_pct']:+.1f} | {r['ml_train_time_increase_pct']:+.1f} |" in md
    assert '<img src="slowdown.png"' in (out / "report.html").read_text()
    # the verdict, the reference study's finding and the validity, as the store holds them
    figures = {c[len("metrics.m60-8q."):]: comparison[c] for c in comparison.index if c.startswith("metrics.m60-8q.")}
    _, sentence = mixed_verdict("m60-8q", figures, 5.0, 15.0)
    assert f"- {sentence} — NOT a GPU measurement" in md
    reference = comparison["params.reference.m60-8q"]  # recorded; shown only beside phases that had their GPU
    assert reference == "CAD < 5 %, ML < 15 % slower; concurrent beats sequential" and f"| {reference} |" not in md
    assert "| - (no GPU: not comparable) |" in md
    assert md.index("NOT A GPU MEASUREMENT") < md.index("## Verdict") and "git SHA: " in md
    assert comparison["tags.bench.validity"] == "not enforced"
    _notebook_shows(run.tracking_uri, tmp_path, f"{r['concurrent_s']:.1f}")


@pytest.mark.slow(minutes=2)  # its module goes first (tests/conftest.py)
def test_consolidation_goes_two_steps_past_the_first_step_that_misses_qos(tmp_path: Path):
    # the ML guest the 1 ms stand-in (as below): what is tested is the sweep past a CAD miss, not the training (four
    # phases of real training were 25 s of CPU here; test_mixed_runs_three_phases... trains for real)
    run = run_bench(tmp_path, "scenario=consolidation", "profile=m60-2q", *SMALL, "scenario.mixed.max_guests=3",
                    "scenario.mixed.qos_p95_frame_ms=0.001", *STAND_IN_ML)
    assert run.proc.returncode == 0, run.proc.stderr[-3000:]
    said = unfold(run.proc.stdout)  # lines folded at 120 columns, read whole
    assert "phase m60-2q/n1: missed QoS (CAD p95 frame time" in said
    assert "the sweep goes on 2 more count(s), to show how QoS breaks" in said
    df = _runs(run.tracking_uri)
    comparison = df[df["tags.bench.role"] == "comparison"].iloc[0]
    assert sorted(df[df["tags.bench.phase"].notna()]["tags.bench.phase"]) == ["m60-2q/ml", "m60-2q/n1", "m60-2q/n2",
                                                                              "m60-2q/n3"]
    assert comparison["metrics.guests_at_qos"] == 0 and comparison["metrics.n1.meets_qos"] == 0
    assert comparison["metrics.n3.meets_qos"] == 0  # the curve past the miss: read, not guessed
    rep = reader.build(run.tracking_uri)
    assert rep.consolidation["guests_at_qos"] == 0 and rep.consolidation_profile == "m60-2q"
    assert rep.stop_reason == comparison["params.stop_reason"]
    assert rep.stop_reason.startswith("QoS missed at n1: CAD p95 frame time")
    assert rep.stop_reason.endswith("; 2 count(s) measured past it")
    out = tmp_path / "report"
    assert report_cli.main(["--tracking-uri", run.tracking_uri, "--out", str(out)]) == 0
    assert f"Stopped: {rep.stop_reason}" in (out / "report.md").read_text()
    from PIL import Image

    assert Image.open(out / "consolidation.png").text["Description"] == "validity: not enforced"


def test_consolidation_counts_guests_that_meet_qos(tmp_path: Path):
    # the ML guest a stand-in of 1 ms steps that trains for the whole (short) replay: every step's windows overlap
    run = run_bench(tmp_path, "scenario=consolidation", "profile=m60-2q", *SMALL, "scenario.mixed.max_guests=2",
                    "scenario.mixed.qos_p95_frame_ms=100000", "scenario.mixed.qos_ml_slowdown_pct=100000", *STAND_IN_ML)
    assert run.proc.returncode == 0, run.proc.stderr[-3000:]
    df = _runs(run.tracking_uri)
    comparison = df[df["tags.bench.role"] == "comparison"].iloc[0]
    assert comparison["metrics.guests_at_qos"] == 2
    n2 = df[df["tags.bench.phase"] == "m60-2q/n2"].iloc[0]
    assert n2["metrics.guests_ok"] == 3  # two CAD guests and the ML guest
    rep = reader.build(run.tracking_uri)
    assert rep.consolidation["n2.p95_frame_ms_worst"] == pytest.approx(comparison["metrics.n2.p95_frame_ms_worst"])
    assert rep.stop_reason == comparison["params.stop_reason"] == "max_guests reached (2), every count met QoS"


def test_a_cad_guest_that_dies_mid_run_stops_its_ml_guest_and_leaves_no_verdict(tmp_path: Path):
    """The CAD guest killed (SIGKILL, as the OOM killer would) while it replays beside the ML guest: the ML guest is
    stopped (it does not train on to its schedule), the run ends failed naming the CAD guest, and the mixed
    profile's slowdowns carry no verdict."""
    import signal
    import subprocess
    import threading
    import time

    import psutil

    from tests.support.helpers import bench_args

    # a replay of seconds (the phase alone replays it whole first), the ML guest the 1 ms stand-in: what is tested is
    # the runner's stop of the ML guest, not its training
    long_cad = ["progress=quiet", "scenario.mixed.cad.overrides=['workload.frames_per_test=200']",
                *SMALL[3:], *STAND_IN_ML]
    args, run_dir, uri = bench_args(tmp_path, "scenario=mixed", "profile=m60-8q", *long_cad)
    proc = subprocess.Popen(args, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env={**__import__("os").environ, "BENCH_DATA_ROOT": str(tmp_path / "no-real-data")})
    lines: list[str] = []
    threading.Thread(target=lambda: lines.extend(proc.stdout), daemon=True).start()  # type: ignore[arg-type]

    def cad_guest() -> psutil.Process | None:  # the mixed phase's guest that has OpenGL loaded
        if not any(ln.startswith("phase m60-8q/mixed") for ln in lines):
            return None
        for p in psutil.Process(proc.pid).children(recursive=True):
            try:
                if "suites.guest" in " ".join(p.cmdline()) and any(
                        "libGL" in m.path or "libEGL" in m.path for m in p.memory_maps()):
                    return p
            except psutil.Error:
                continue
        return None

    deadline, victim = time.monotonic() + 300, None
    while victim is None and time.monotonic() < deadline and proc.poll() is None:
        victim = cad_guest()
        time.sleep(0.2)
    assert victim is not None, "".join(lines)[-3000:]
    time.sleep(1.0)  # into its replay, beside the ML guest
    victim.send_signal(signal.SIGKILL)  # a process this test started (the bench's guest)
    code = proc.wait(timeout=300)
    text = "".join(lines)
    assert code != 0 and "Traceback" not in text, text[-3000:]
    from suites.render import mixed_report

    said, _ = mixed_report.verdicts(reader.build(uri))["m60-8q"]
    assert said.startswith("inconclusive (1 guest(s) failed: the phases are not the guests' together)"), said
    df = _runs(uri)
    guests = df[df["tags.bench.role"] == "guest"]
    assert (guests["tags.bench.status"] != "ok").sum() == 1  # the killed CAD guest, recorded as failed
    ml = guests[guests["params.workload"] == "fixed-step"]
    assert len(ml) >= 1 and (ml["metrics.train_time_s"].dropna() < 120).all()  # stopped, not left training
