"""A composition played at a device file's speed (suites/config/stand_in.py, ``stand_in=<device file>``): each
training guest fixed-step at the device's step time over as many images, each CAD replay fixed-frame at its frame
time per viewset, a CPU arm at the reference study's ratio, MPS played as time-slicing and said; an inventory that
holds the device's GPU."""

from __future__ import annotations

import pytest

from suites.config import device_file, stand_in
from suites.config.compose import compose_run
from suites.config.schema import register_configs
from suites.errors import ConfigError
from tests.support.hosts import host


@pytest.fixture(scope="module", autouse=True)
def configs() -> None:
    register_configs()


def test_a_training_run_is_fixed_step_at_the_devices_step_over_as_many_images():
    (b1,) = compose_run(["stand_in=h200", "profile=passthrough-1gpu", "workload=mnist-torch", "workload.epochs=3",
                         "workload.target_accuracy=0.99"]).runs[0].groups
    w = b1.workload
    assert (w.name, w.step_ms, w.batch_size, w.images, w.epochs, w.target_accuracy) == \
        ("fixed-step", 4.414, 512, 60_000, 3, None)  # the H200's eager MNIST step; no accuracy a sleep could reach
    # sized as the accuracy run it stands for: its epochs, so a device with steps 3x as long trains 3x as long (with
    # no target it was a 2 s window whatever the step: a 3x slower GPU trained as long as the H200)
    assert w.sized_by() == "work"
    (timed,) = compose_run(["stand_in=h200", "workload=mnist-torch", "workload.size_by=time"]).runs[0].groups
    assert timed.workload.sized_by() == "time"  # a throughput run stays one
    (b3,) = compose_run(["stand_in=h200", "workload=cifar10-torch", "workload.compile=true",
                         "workload.compile_mode=reduce-overhead", "data.synthetic_train=50000"]).runs[0].groups
    assert (b3.workload.step_ms, b3.workload.images) == (3.866, 50_000)
    (half,) = compose_run(["stand_in=h200", "workload=mnist-torch", "workload.batch_size=128",
                           "workload.train_limit=12000"]).runs[0].groups
    assert (half.workload.step_ms, half.workload.images) == (1.1035, 12_000)  # a quarter batch: a quarter step
    assert stand_in.notes(device_file.load("h200")) == [
        "cifar10-torch: no eager step time measured on NVIDIA H200: played at its compiled step"]


def test_a_comparison_has_its_cpu_arm_at_the_reference_studys_ratio():
    comp = compose_run(["stand_in=h200", "scenario=gpu-vs-cpu", "workload=mnist-torch"])
    assert {r.label: r.groups[0].workload.step_ms for r in comp.runs} == {"1-gpu": 4.414, "cpu": 44.14}


@pytest.mark.heavy
def test_a_mixed_run_has_fixed_step_beside_fixed_frame_at_each_viewsets_frame_time():
    comp = compose_run(["stand_in=h200", "scenario=mixed", "profile=m60-8q"])
    mixed = next(r for r in comp.runs if r.label == "m60-8q/mixed")
    cad, ml = (next(g.workload for g in mixed.groups if g.workload.name == n) for n in ("fixed-frame", "fixed-step"))
    assert cad.frame_ms == {"mechanical": 1.958, "architecture": 0.647, "product": 0.368}
    assert ml.until_stopped and cad.min_replay_s == ml.min_window_s  # the replay lasts the ML guest's window


def test_without_a_stand_in_the_workloads_are_themselves_and_a_bad_device_file_is_one_error():
    (g,) = compose_run(["workload=mnist-torch"]).runs[0].groups
    assert g.workload.name == "mnist-torch"
    with pytest.raises(ConfigError, match=r"GPU=no-such-gpu: .*no such file"):
        compose_run(["stand_in=no-such-gpu", "workload=mnist-torch"])


def test_a_missing_step_is_named_with_what_the_file_has():
    with pytest.raises(ConfigError, match=r"no step_ms\['mnist-torch/512/eager'\]"):
        stand_in.step_of({"gpu": "X", "step_ms": {}, "path": "x.json"}, "mnist-torch", 512, "eager")


def test_the_inventory_holds_the_devices_gpu_and_says_it_is_a_rehearsal():
    inv = stand_in.inventory_of(device_file.load("h200"), host())
    assert inv.has_gpu and inv.gpus[0]["name"] == "NVIDIA H200" and inv.gpus[0]["mem_total_MiB"] == 143_771.0
    assert inv.driver_version == "rehearsal" and inv.gpu_status == "rehearsal at NVIDIA H200 speed"


def test_every_guest_of_a_stand_in_run_says_so_and_mps_is_played_as_time_slicing():
    """No GPU here: a sizing's MPS consolidation planned for the device runs, said, instead of being refused."""
    from suites.run.plan import plan

    comp = compose_run(["stand_in=h200", "profile=m60-2q", "sharing=mps", "scenario=concurrent",
                        "profile.vcpus=1", "workload=mnist-torch"])
    planned = plan(comp.runs[0], host())
    assert all(stand_in.MPS_NOTE in p.note and "stand_in=h200: workloads played at" in p.note
               for p in planned.placements)
    with pytest.raises(ConfigError, match="sharing=mps needs an NVIDIA GPU"):  # without a stand-in: refused as ever
        plan(compose_run(["profile=m60-2q", "sharing=mps", "workload=mnist-torch"]).runs[0], host())
