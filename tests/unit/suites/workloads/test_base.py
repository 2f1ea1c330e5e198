"""Tests of ``suites/workloads/base.py``."""

from __future__ import annotations

import pytest
import torch

from suites.errors import BenchError
from suites.workloads import list_workloads, timing, workload_class
from suites.workloads.base import CAD, ML, GuestContext, TrainConfig
from suites.workloads.timing import StepMeter
from suites.workloads.torch_common import TorchTrainConfig
from tests.support.fakes import Tiny
from tests.support.steps import fixed_step


def test_later_repeats_keep_the_compiled_model_and_get_fresh_weights():
    import torch

    from suites.workloads.base import GuestContext
    from suites.workloads.torch_common import TorchTrainConfig
    from tests.support.fakes import Tiny

    w = Tiny(TorchTrainConfig(name="tiny-test", batch_size=32, channels_last=False),
             GuestContext("g0", [0], [], None, {}, seed=1))
    w.prepare()
    model, net = w.model, w.net  # with compile=true, model is the torch.compile wrapper and its graphs
    fresh = {k: v.clone() for k, v in net.state_dict().items()}
    meter = StepMeter(0, w.total_steps())
    meter.start()
    w.train(meter)
    assert not all(torch.equal(fresh[k], v) for k, v in net.state_dict().items())
    w.build()  # the next repeat
    assert w.model is model and w.net is net  # a new model recompiled (and re-recorded CUDA graphs) in the clock
    assert all(torch.equal(fresh[k], v) for k, v in w.net.state_dict().items())
    assert w.compiled_frames() == 0  # no compile here: nothing counted


def test_warm_up_runs_outside_the_timed_region_and_leaves_the_weights_as_built():
    ctx = GuestContext("g0", [0], [], None, {}, seed=1)
    w = Tiny(TorchTrainConfig(name="tiny-test", batch_size=32, channels_last=False), ctx)
    w.prepare()
    assert "warmup_untimed_s" not in ctx.info  # CPU without compile: nothing to warm
    before = {k: v.clone() for k, v in w.net.state_dict().items()}
    seconds = w.warm_up()
    after = w.net.state_dict()
    assert seconds > 0 and all(torch.equal(before[k], after[k]) for k in before)  # BatchNorm stats too
    assert all(p.grad is None for p in w.net.parameters())


def test_an_accuracy_run_keeps_its_recipe_and_a_target_makes_a_run_sized_by_work():
    assert TrainConfig(name="x", framework="x", target_accuracy=0.99).sized_by() == "work"
    assert TrainConfig(name="x", framework="x").sized_by() == "time"
    assert TrainConfig(name="x", framework="x", target_accuracy=0.99, size_by="time").sized_by() == "time"
    w = fixed_step(step_ms=0.5, target_accuracy=0.5, epochs=0.01)
    assert timing.calibrate(w, w.cfg) == {"sized_by": "work"} and w.total_steps() == 5  # ceil(468.75 x 0.01)
    with pytest.raises(BenchError, match="workload.until_stopped"):
        TrainConfig(name="x", framework="x", target_accuracy=0.9, until_stopped=True).check()


def test_discovery_finds_every_plugin_once():
    names = list_workloads()
    assert {"mnist-torch", "mnist-tf", "cifar10-torch", "cifar10-tf", "graphics-replay", "apitrace-replay",
            "cuda-probe", "memory-fill"} <= set(names)
    assert workload_class("graphics-replay").category == CAD and workload_class("mnist-tf").category == ML


def test_a_plugin_that_declares_its_old_kind_is_read_as_its_category_and_said():
    from suites.workloads.base import PROBE, Workload

    with pytest.warns(FutureWarning, match=r"^workload old-probe: kind is category now"):
        class OldProbe(Workload):
            name = "old-probe"
            kind = PROBE

    assert OldProbe.category == PROBE and Workload.category == ML


def test_a_guest_imports_the_plugin_named_after_its_workload_alone():
    import subprocess
    import sys

    code = ("import sys; from suites.workloads import workload_class; c = workload_class('fixed-step'); "
            "print(c.__module__, sorted(m for m in sys.modules if m.startswith('suites.workloads.')))")
    said = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert said.startswith("suites.workloads.fixed_step ") and "airbench94" not in said and "graphics" not in said
    # a plugin in a module of another name (mnist-tf in keras_models.py) is found by discovery
    assert workload_class("mnist-tf").__module__ == "suites.workloads.keras_models"
