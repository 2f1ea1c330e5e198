"""The mixed-workload study: derived figures, QoS scoring, and the report read back from MLflow."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from suites.commands import report as report_cli
from suites.config.compose import mixed_phases
from suites.record import reader
from suites.render.tables import unfold
from suites.run.mixed import PhaseNumbers, consolidation_metrics, derive, mixed_verdict, qos

from .helpers import REPO, compose_config, run_bench

SMALL = ["progress=quiet", "scenario.study.cad.overrides=['workload.frames_per_test=10']",
         "scenario.study.ml.overrides=['workload.train_limit=2048','workload.width=8','workload.target_accuracy=null',"
         "'workload.until_stopped=true','workload.min_window_s=0.5','workload.warmup_steps=3']",
         "profile.memory_MiB=2048",
         "scenario.repeats=1"]


def test_derive_gives_the_study_figures():
    cad = PhaseNumbers(makespan_s=10.0, host_cpu_pct=40.0, cad_guests=2, cad_run_time_s=8.0,
                       cad_p95_frame_ms=[20.0, 30.0], cad_frames=200, energy_J=1000.0)
    mixed = PhaseNumbers(makespan_s=12.0, host_cpu_pct=70.0, cad_run_time_s=8.4, cad_p95_frame_ms=[30.0, 40.0],
                         ml_images_per_sec=1000 / 5.75, ml_images=6000, energy_J=2000.0)
    ml = PhaseNumbers(makespan_s=6.0, host_cpu_pct=30.0, ml_images_per_sec=1000 / 5.0, ml_images=6000)
    d = derive({"cad": cad, "mixed": mixed, "ml": ml})
    assert d["cad_run_time_increase_pct"] == pytest.approx(5.0)
    assert d["ml_train_time_increase_pct"] == pytest.approx(15.0)
    assert (d["sequential_s"], d["concurrent_s"]) == (16.0, 12.0) and d["concurrent_vs_sequential"] == 0.75
    assert (d["cad_p95_frame_ms_alone"], d["cad_p95_frame_ms_mixed"]) == (25.0, 35.0)
    assert d["mixed.images_per_J"] == 3.0 and d["cad.frames_per_J"] == 0.2
    assert math.isnan(d["ml.energy_J"]) and math.isnan(d["ml.images_per_J"])  # no power reading: no energy


def test_qos_needs_every_cad_guest_and_the_ml_guest_within_bounds():
    alone = PhaseNumbers(ml_images_per_sec=1000 / 10.0)
    good = PhaseNumbers(cad_p95_frame_ms=[40.0, 49.0], ml_images_per_sec=1000 / 11.0)
    assert qos(good, alone, 50.0, 15.0) == (True, "")
    assert qos(PhaseNumbers(cad_p95_frame_ms=[40.0, 51.0], ml_images_per_sec=1000 / 11.0), alone, 50.0, 15.0)[1] == \
        "CAD p95 frame time 51.0 ms > 50 ms"
    slow = PhaseNumbers(cad_p95_frame_ms=[1.0], ml_images_per_sec=1000 / 12.0)
    assert "ML slowdown 20.0 % > 15 %" in qos(slow, alone, 50.0, 15.0)[1]
    assert not qos(PhaseNumbers(cad_p95_frame_ms=[1.0], failed=1), None, 50.0, 15.0)[0]
    assert not qos(PhaseNumbers(cad_p95_frame_ms=[]), None, 50.0, 15.0)[0]  # nothing measured is no pass


@pytest.mark.parametrize("p95s,score", [([10, 20, 60], 2), ([60, 10], 0), ([10, 60, 10], 1), ([10, 10], 2)])
def test_consolidation_score_is_the_largest_count_with_every_step_before_passing(p95s: list[int], score: int):
    numbers = {"p/ml": PhaseNumbers(ml_images_per_sec=1000 / 10.0)}
    numbers.update({f"p/n{i + 1}": PhaseNumbers(cad_p95_frame_ms=[float(v)], ml_images_per_sec=1000 / 10.0)
                    for i, v in enumerate(p95s)})
    assert consolidation_metrics({k: [v] for k, v in numbers.items()}, 50.0, 15.0)["guests_at_qos"] == score


def test_mixed_phases_are_three_per_profile_with_their_mix():
    cfg = compose_config("scenario=mixed", "scenario.study.profiles=[m60-8q,m60-1q]")
    labels = [(p.label, p.overrides, [(g.workload, g.guests) for g in p.mix]) for p in mixed_phases(cfg)]
    assert labels[:3] == [("m60-8q/cad", ["profile=m60-8q"], [("graphics-replay", 1)]),
                          ("m60-8q/mixed", ["profile=m60-8q"], [("graphics-replay", 1), ("mnist-torch", 1)]),
                          ("m60-8q/ml", ["profile=m60-8q"], [("mnist-torch", 1)])]
    assert [lab for lab, _, _ in labels[3:]] == ["m60-1q/cad", "m60-1q/mixed", "m60-1q/ml"]


def _runs(uri: str):
    import mlflow

    mlflow.set_tracking_uri(uri)
    return mlflow.search_runs(experiment_names=["gpu-mixed-bench"])


@pytest.mark.e2e
def test_mixed_runs_three_phases_and_the_report_equals_the_store(tmp: Path):
    run = run_bench(tmp, "scenario=mixed", "profile=m60-8q", *SMALL, timeout=600)
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
    out = tmp / "report"
    assert report_cli.main(["--tracking-uri", run.tracking_uri, "--out", str(out)]) == 0
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
    _notebook_shows(run.tracking_uri, tmp, f"{r['concurrent_s']:.1f}")


def _notebook_shows(uri: str, tmp: Path, text: str) -> None:
    """Execute the report notebook headless against this store; its output must hold the report's numbers."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(REPO / "notebooks" / "consolidation_report.ipynb", as_version=4)
    params = next(c for c in nb.cells if "parameters" in c.metadata.get("tags", []))
    params.source = f"TRACKING_URI = {uri!r}\nEXPERIMENT = 'gpu-mixed-bench'\nOUT = {str(tmp / 'nb')!r}"
    NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(tmp)}}).execute()
    shown = "".join(str(o.get("data", {}).get("text/markdown", "")) + str(o.get("data", {}).get("text/plain", ""))
                    for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []))
    assert "m60-8q" in shown and text in shown
    assert (tmp / "nb" / "report.html").exists()


@pytest.mark.e2e
def test_consolidation_goes_two_steps_past_the_first_step_that_misses_qos(tmp: Path):
    run = run_bench(tmp, "scenario=consolidation", "profile=m60-2q", *SMALL, "scenario.study.max_guests=3",
                    "scenario.study.qos_p95_frame_ms=0.001", timeout=600)
    assert run.proc.returncode == 0, run.proc.stderr[-3000:]
    said = unfold(run.proc.stdout)  # lines folded at 120 columns, read whole
    assert "phase m60-2q/n1 missed QoS (CAD p95 frame time" in said
    assert "the sweep goes on 2 more step(s), to show how QoS breaks" in said
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
    assert rep.stop_reason.endswith("; 2 step(s) measured past it")
    out = tmp / "report"
    assert report_cli.main(["--tracking-uri", run.tracking_uri, "--out", str(out)]) == 0
    assert f"Stopped: {rep.stop_reason}" in (out / "report.md").read_text()
    from PIL import Image

    assert Image.open(out / "consolidation.png").text["Description"] == "validity: not enforced"


@pytest.mark.e2e
def test_consolidation_counts_guests_that_meet_qos(tmp: Path):
    # the ML guest a stand-in of 1 ms steps that trains for the whole (short) replay: every step's windows overlap
    run = run_bench(tmp, "scenario=consolidation", "profile=m60-2q", *SMALL, "scenario.study.max_guests=2",
                    "scenario.study.qos_p95_frame_ms=100000", "scenario.study.qos_ml_slowdown_pct=100000",
                    "scenario.study.ml.workload=fixed-step", "scenario.study.ml.overrides=['workload.step_ms=1',"
                    "'workload.min_window_s=0.5','workload.until_stopped=true','workload.warmup_steps=3']",
                    timeout=600)
    assert run.proc.returncode == 0, run.proc.stderr[-3000:]
    df = _runs(run.tracking_uri)
    comparison = df[df["tags.bench.role"] == "comparison"].iloc[0]
    assert comparison["metrics.guests_at_qos"] == 2
    n2 = df[df["tags.bench.phase"] == "m60-2q/n2"].iloc[0]
    assert n2["metrics.guests_ok"] == 3  # two CAD guests and the ML guest
    rep = reader.build(run.tracking_uri)
    assert rep.consolidation["n2.p95_frame_ms_worst"] == pytest.approx(comparison["metrics.n2.p95_frame_ms_worst"])
    assert rep.stop_reason == comparison["params.stop_reason"] == "max_guests reached (2), every step met QoS"
