"""suites/guest/sizing.py: a throughput run is sized by time, so its rate has a window on a GPU-fast step as on a
CPU-slow one; and a mixed scenario's guests are measured beside each other (their overlap), or no verdict."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from gpu_probe.stats import covered_fraction
from suites.errors import BenchError
from suites.guest import sizing
from suites.guest.protocol import GuestResult
from suites.run.mixed import PhaseNumbers, mixed_verdict, overlap_shortfall, qos
from suites.run.outcome import GuestOutcome, overlaps
from suites.workloads.base import StepMeter, TrainConfig
from suites.workloads.fixed_step import FixedStep, FixedStepConfig

from .helpers import run_bench


def fixed_step(**cfg: object) -> FixedStep:
    from suites.workloads.base import GuestContext

    config = FixedStepConfig(**cfg)  # type: ignore[arg-type]
    config.check()
    w = FixedStep(config, GuestContext("g0", [0], [], None, {}, 0))
    w.prepare()
    return w


def timed_run(w: FixedStep, chosen: dict) -> dict[str, float]:
    """What the guest harness does after the barrier: one meter over the sized steps, ending at the window."""
    meter = StepMeter(w.cfg.warmup_steps, w.total_steps(), min_steps=w.cfg.min_timed_steps, min_s=w.cfg.min_timed_s)
    sizing.hold(meter, w.cfg, chosen, world=1)
    meter.start()
    w.train(meter)
    return meter.finish()


@pytest.mark.parametrize("step_ms", [0.5, 50.0], ids=["gpu-like-0.5ms", "cpu-like-50ms"])
def test_a_time_sized_window_lasts_min_window_s_whatever_the_step_time(step_ms: float):
    w = fixed_step(step_ms=step_ms, min_window_s=1.0, warmup_steps=3)
    chosen = sizing.size(w, w.cfg)
    figures = timed_run(w, chosen)
    assert chosen["sized_by"] == "time" and chosen["window_s"] == 1.0
    assert chosen["calibrated_step_ms"] >= step_ms  # a sleep lasts at least its time
    assert figures["timed_s"] >= 1.0 and figures["timed_steps"] >= 20  # the window, and the step floor
    assert figures["images_per_sec"] == pytest.approx(128 / (figures["timed_s"] / figures["timed_steps"]))
    # it ended at its window, inside the schedule's 1.5 windows of steps (or at their end, had it run slower)
    assert figures["steps"] <= chosen["sized_steps"] and (figures["timed_s"] < 1.3 or figures["steps"] ==
                                                          chosen["sized_steps"])
    # the count a fixed 60,000-image epoch of batch 128 would have taken: 469 steps whatever the speed
    assert (figures["steps"] < 469) == (step_ms == 50.0)


def test_an_accuracy_run_keeps_its_recipe_and_a_target_makes_a_run_sized_by_work():
    assert TrainConfig(name="x", framework="x", target_accuracy=0.99).sized_by() == "work"
    assert TrainConfig(name="x", framework="x").sized_by() == "time"
    assert TrainConfig(name="x", framework="x", target_accuracy=0.99, size_by="time").sized_by() == "time"
    w = fixed_step(step_ms=0.5, target_accuracy=0.5, epochs=0.01)
    assert sizing.size(w, w.cfg) == {"sized_by": "work"} and w.total_steps() == 5  # ceil(468.75 x 0.01)
    with pytest.raises(BenchError, match="workload.until_stopped"):
        TrainConfig(name="x", framework="x", target_accuracy=0.9, until_stopped=True).check()


def test_max_steps_caps_a_time_sized_run_and_says_so():
    w = fixed_step(step_ms=0.5, min_window_s=1.0, max_steps=30)
    chosen = sizing.size(w, w.cfg)
    assert chosen["sized_steps"] == 30 and "workload.max_steps=30" in chosen["capped_by"]


def test_an_open_ended_run_stops_when_told_once_its_window_has_lasted():
    w = fixed_step(step_ms=0.5, min_window_s=0.3, warmup_steps=2)
    chosen = sizing.size(w, w.cfg, open_ended=True)
    assert chosen["window_s"] == w.cfg.max_window_s and chosen["sized_steps"] > 100_000  # laid over 600 s
    meter = StepMeter(2, w.total_steps(), min_steps=20)
    meter.stop_requested, meter.hold_s = lambda: True, 0.3  # told at once: it still fills its window
    meter.start()
    w.train(meter)
    figures = meter.finish()
    assert 0.3 <= figures["timed_s"] < 0.6 and figures["steps"] < chosen["sized_steps"]


# --- overlap -------------------------------------------------------------------------------------------------------
def guest(gid: str, window: tuple[float, float], active: tuple[float, float], workload: str = "mnist-torch"):
    result = GuestResult(gid, "ok", t_train_start=active[0], t_train_end=active[1], windows=[window])
    spec = type("Spec", (), {"guest_id": gid, "workload": workload})()
    return GuestOutcome(spec=spec, placement=None, result=result, log_path=Path("/dev/null"))  # type: ignore


def test_a_pair_overlaps_as_much_as_each_window_had_the_other_at_work():
    assert covered_fraction((0.0, 10.0), (5.0, 20.0)) == 0.5 and math.isnan(covered_fraction((1.0, 1.0), (0, 2)))
    assert covered_fraction((0.0, 10.0), (0.0, 3.0), (2.0, 4.0), (8.0, 12.0)) == 0.6  # a union, counted once
    cad = guest("g0", (1.0, 11.0), (0.0, 11.0), "graphics-replay")
    ml = guest("g1", (2.0, 11.2), (0.0, 11.2))  # trained until the CAD replay ended (one step past it)
    assert overlaps([cad, ml])["overlap_pct"] == pytest.approx(100 * 9.0 / 9.2)
    assert overlaps([cad, ml])["overlap_pct.g0.g1"] == pytest.approx(100 * 9.0 / 9.2)
    short = guest("g1", (0.5, 0.6), (0.0, 0.6))  # a 0.1 s ML run beside a 10 s replay: within it, but it apart
    assert overlaps([cad, short])["overlap_pct"] == 0.0
    assert overlaps([cad]) == {}


def test_a_consolidation_step_is_beside_each_other_while_some_cad_guest_replays():
    # two CAD replays of different lengths, the ML guest open-ended until the last ends: the CAD pair overlaps
    # little (one finished first), yet every window had a guest of the other workload at work all along
    cads = [guest("g0", (0.1, 6.0), (0.0, 6.0), "graphics-replay"), guest("g1", (0.1, 10.0), (0.0, 10.0),
                                                                           "graphics-replay")]
    ml = guest("g2", (0.5, 10.1), (0.0, 10.1))
    got = overlaps([*cads, ml])
    assert got["overlap_pct.g0.g1"] == pytest.approx(100 * 5.9 / 9.9) and got["overlap_pct.g1.g2"] > 90
    assert got["overlap_pct"] == pytest.approx(100 * 9.5 / 9.6)  # the ML window's last 0.1 s had no replay


def test_a_slowdown_measured_apart_is_inconclusive_never_a_verdict():
    figures = {"cad_run_time_increase_pct": 1.0, "cad_run_time_increase_pct.ci_low": 0.5,
               "cad_run_time_increase_pct.ci_high": 1.5, "ml_train_time_increase_pct": 2.0,
               "ml_train_time_increase_pct.ci_low": 1.0, "ml_train_time_increase_pct.ci_high": 3.0,
               "ml_train_time_increase_pct.n": 3, "concurrent_vs_sequential": 0.6,
               "concurrent_vs_sequential.ci_low": 0.5, "concurrent_vs_sequential.ci_high": 0.7}
    assert mixed_verdict("p", {**figures, "overlap_pct": 95.0}, 5.0, 15.0)[0] == "consolidate"
    assert mixed_verdict("p", {**figures, "overlap_pct": 40.0}, 5.0, 15.0)[0] == "inconclusive (overlap 40 % < 90 %)"
    alone = PhaseNumbers(ml_images_per_sec=100.0)
    step = PhaseNumbers(cad_p95_frame_ms=[1.0], ml_images_per_sec=99.0, overlap_pct=12.0)
    assert qos(step, alone, 50.0, 15.0) == (False, overlap_shortfall(12.0))


# --- through the runner -------------------------------------------------------------------------------------------
@pytest.mark.e2e
@pytest.mark.parametrize("step_ms", ["0.5", "50"], ids=["gpu-like-0.5ms", "cpu-like-50ms"])
def test_four_ranks_each_fill_the_window_whatever_the_step_time(tmp: Path, step_ms: str):
    run = run_bench(tmp, "workload=fixed-step", f"workload.step_ms={step_ms}", "workload.min_window_s=1",
                    "workload.ranks=4", "progress=quiet")
    assert run.proc.returncode == 0, run.proc.stderr[-2000:]
    result = json.loads((run.run_dir / "results.json").read_text())["guests"][0]["result"]
    info, m = result["info"], result["metrics"]
    assert info["ranks"] == 4 and info["sized_by"] == "time" and m["steps"] == info["sized_steps"]  # lockstep
    assert m["timed_s"] >= 1.0 and m["images_per_sec"] > 0 and m["images"] == m["steps"] * 128 * 4


MIXED_FAST_ML = ["scenario=mixed", "progress=quiet", "scenario.study.cad.overrides=['workload.frames_per_test=10']",
                 "scenario.study.ml.workload=fixed-step", "profile.memory_MiB=2048", "scenario.repeats=1"]


@pytest.mark.e2e
@pytest.mark.parametrize("ml,overlapped", [
    ("['workload.step_ms=0.5','workload.min_window_s=0.5','workload.until_stopped=true']", True),
    ("['workload.step_ms=0.5','workload.min_window_s=0.25']", False)], ids=["until-stopped", "short"])
def test_the_mixed_ml_guest_trains_for_the_cad_replay_or_the_slowdown_is_inconclusive(tmp: Path, ml: str,
                                                                                    overlapped: bool):
    run = run_bench(tmp, *MIXED_FAST_ML, f"scenario.study.ml.overrides={ml}")
    assert run.proc.returncode == 0, run.proc.stderr[-3000:]
    mixed = json.loads((run.run_dir / "m60-8q-mixed" / "results.json").read_text())
    overlap = mixed["host_metrics"]["overlap_pct"]
    assert mixed["host_metrics"]["overlap_pct.g0.g1"] == overlap
    report = (run.run_dir / "report" / "report.md").read_text()
    if overlapped:
        assert overlap >= 90 and "inconclusive (overlap" not in report
    else:
        assert overlap < 90 and f"inconclusive (overlap {overlap:.0f} % < 90 %)" in report


def test_a_synthetic_stand_in_is_the_real_sets_size_where_the_guests_have_gpus():
    from types import SimpleNamespace

    from suites.data.options import DataConfig
    from suites.run.plan import data_sized
    from suites.workloads.cifar10_torch import Cifar10Torch
    from suites.workloads.mnist_torch import MnistTorch

    gpu, cpu = [SimpleNamespace(gpus=["0"])], [SimpleNamespace(gpus=[])]
    assert data_sized(DataConfig(), Cifar10Torch, gpu).train_images(6000) == 50_000  # type: ignore[arg-type]
    assert data_sized(DataConfig(), MnistTorch, gpu).train_images(24000) == 60_000  # type: ignore[arg-type]
    assert data_sized(DataConfig(), Cifar10Torch, cpu).train_images(6000) == 6000  # type: ignore[arg-type]
    given = DataConfig(synthetic_train=2048)
    assert data_sized(given, Cifar10Torch, gpu) is given  # type: ignore[arg-type]
    assert data_sized(DataConfig(), FixedStep, gpu).synthetic_train is None  # type: ignore[arg-type]  # no data set
