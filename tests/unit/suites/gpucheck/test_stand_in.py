"""What a rehearsal plays (suites/gpucheck/stand_in.py): each check's bench command with its training at the device
file's step time and its CAD replay at the device file's frame times, on an inventory holding the device's GPU."""

from __future__ import annotations

import pytest

from suites.config.compose import compose_run
from suites.config.schema import register_configs
from suites.errors import ConfigError
from suites.gpucheck import device_file
from suites.gpucheck.stand_in import NOT_PLAYED, StandIn
from tests.support.hosts import host


@pytest.fixture(scope="module")
def h200() -> StandIn:
    register_configs()
    return StandIn(device_file.load("h200"))


def test_a_training_run_is_fixed_step_at_the_devices_step_over_as_many_images(h200: StandIn):
    b1 = h200.bench(["profile=passthrough-1gpu", "workload=mnist-torch", "workload.epochs=3",
                     "workload.eval_each_epoch=true", "workload.target_accuracy=0.99", "data.root=/x",
                     "data.synthetic=false"])
    assert b1 == ["profile=passthrough-1gpu", "workload=fixed-step", "workload.step_ms=4.414",
                  "workload.batch_size=512", "workload.images=60000", "workload.epochs=3",
                  "workload.eval_each_epoch=true"]
    compose_run(b1)  # every key is one fixed-step has
    b3 = h200.bench(["workload=cifar10-torch", "workload.precision=fp16", "workload.compile=true",
                     "workload.compile_mode=reduce-overhead", "workload.epochs=10", "data.synthetic_train=50000",
                     "repeats=5"])
    assert "workload.step_ms=3.866" in b3 and "workload.images=50000" in b3 and "repeats=5" in b3
    assert not any(o.startswith(("workload.precision", "workload.compile")) for o in b3)
    b2 = h200.bench(["workload=cifar10-torch", "workload.compile=false", "data.synthetic_train=50000"])
    assert "workload.step_ms=3.866" in b2  # no eager step measured: the compiled one, said by notes()
    assert h200.notes() == ["cifar10-torch: no eager step time measured on NVIDIA H200: played at its compiled step"]


def test_a_comparison_has_its_cpu_arm_at_the_reference_studys_ratio(h200: StandIn):
    i = h200.bench(["scenario=gpu-vs-cpu", "workload=mnist-torch", "+preset=smoke", "scenario.repeats=2"])
    assert "scenario.phases=[{label:1-gpu,overrides:['workload.step_ms=4.414']},{label:cpu,overrides:" \
           "['workload.step_ms=44.14']}]" in i and "scenario.baseline=1-gpu" in i
    comp = compose_run(i)
    assert [r.label for r in comp.runs] == ["1-gpu", "cpu"] and comp.cfg.scenario.repeats == 2


def test_a_mixed_run_has_fixed_step_beside_fixed_frame_at_each_viewsets_frame_time(h200: StandIn):
    j = h200.bench(["scenario=mixed", "profile=m60-8q", "scenario.repeats=2"])
    assert "scenario.mixed.cad.workload=fixed-frame" in j and "scenario.mixed.ml.workload=fixed-step" in j
    cad = next(o for o in j if o.startswith("scenario.mixed.cad.overrides="))
    assert "'+workload.frame_ms.mechanical=1.958'" in cad and "'+workload.frame_ms.product=0.368'" in cad
    comp = compose_run(j)
    cad_run = next(g for r in comp.runs for g in r.cfg.scenario.groups if g.workload == "fixed-frame")
    assert cad_run.workload  # composed: the CAD guests are fixed-frame


def test_the_inventory_holds_the_devices_gpu_and_says_it_is_a_rehearsal(h200: StandIn):
    inv = h200.inventory(host())
    assert inv.has_gpu and inv.gpus[0]["name"] == "NVIDIA H200" and inv.gpus[0]["mem_total_MiB"] == 143_771.0
    assert inv.driver_version == "rehearsal" and inv.gpu_status == "rehearsal at NVIDIA H200 speed"


def test_what_only_a_gpu_can_say_is_not_played_and_a_missing_step_is_named():
    assert set(NOT_PLAYED) == {"a", "c1", "c2", "d", "e", "f", "g", "k", "h"}
    bare = StandIn({"gpu": "X", "step_ms": {}, "frame_ms": {}})
    with pytest.raises(ConfigError, match=r"no step_ms\['mnist-torch/512/eager'\]"):
        bare.bench(["workload=mnist-torch"])
