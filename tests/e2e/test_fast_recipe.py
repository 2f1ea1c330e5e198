"""The record's recipe as the torch workloads run it: learning to its target on a learnable CIFAR-shaped set,
time to accuracy without the evaluations, the schedule and momentum it states, its data augmentation, whitening
and lookahead."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from suites.data import cifar
from suites.workloads.base import GuestContext
from suites.workloads.cifar10_torch import Cifar10Torch, Cifar10TorchConfig
from suites.workloads.timing import StepMeter


@pytest.fixture(scope="module")
def look_alike(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """CIFAR-10's shape and file layout; each class a colour pattern, shifted, flipped and noised: a small net can
    separate them, so the accuracy path is exercised without the real files."""
    return cifar.synthesize(tmp_path_factory.mktemp("cifar"), n_train=1000, n_test=300, seed=2)


def prepared(root: Path, **overrides) -> Cifar10Torch:
    cfg = Cifar10TorchConfig(**{"width": 8, "epochs": 3, "batch_size": 100, "warmup_steps": 3, **overrides})
    wl = Cifar10Torch(cfg, GuestContext("g0", [0, 1], [], None, {"root": str(root)}, seed=0))
    wl.prepare()
    return wl


def trained(wl: Cifar10Torch) -> dict:
    meter = StepMeter(wl.cfg.warmup_steps, wl.total_steps())
    meter.start()
    wl.train(meter)
    return {**meter.finish(), **wl.evaluate()}


def met_at_the_end(m: dict, epochs: int) -> bool:
    """The time to accuracy is the training clock after the last epoch: the train time less what ran after the last
    check (a clock read or two), well under the half epoch that sets it apart from the check before. A bound of 0.05 s
    failed in a fresh-clone CI (5.029 vs 5.107 s: a 2-core host running three workers descheduled the process
    between the two reads); an accuracy met an epoch early is still an epoch off."""
    gap = m["train_time_s"] - m["time_to_accuracy_s"]
    return 0.0 <= gap < m["train_time_s"] / epochs / 2


def test_the_record_recipe_reaches_its_target_on_a_learnable_cifar_shaped_set(look_alike: Path):
    wl = prepared(look_alike, epochs=5)
    m = trained(wl)
    assert m["steps"] == 50 and m["images"] == 5000  # 5 epochs of 10 whole batches (the last partial one dropped)
    assert m["target_accuracy"] == 0.94 and m["target_met"] == 1.0 and m["test_accuracy"] >= 0.94
    assert met_at_the_end(m, epochs=5)  # checked at the end, as the record
    assert wl.ctx.info["precision"] == "fp32" and wl.ctx.info["framebuffer_cap"] == "not applied (no GPU)"


def test_a_diverged_run_fails_with_its_reason_not_ok_at_chance(look_alike: Path):
    diverged = r"^training diverged: loss nan after 10 steps \(workload.lr=1e\+30, precision fp32\)$"
    with pytest.raises(RuntimeError, match=diverged):
        trained(prepared(look_alike, lr=1e30))  # checked at the end of the first epoch


def test_a_missed_target_is_said_and_has_no_time_to_accuracy(look_alike: Path):
    m = trained(prepared(look_alike, epochs=0.1, target_accuracy=0.999))  # one step: nowhere near it
    assert m["steps"] == 1 and m["target_met"] == 0.0 and "time_to_accuracy_s" not in m


def test_time_to_accuracy_leaves_out_a_slow_evaluation(look_alike: Path, monkeypatch: pytest.MonkeyPatch):
    wl = prepared(look_alike, eval_each_epoch=True, target_accuracy=0.9)
    figures = iter([0.5, 0.6, 0.95])  # met after the third (last) epoch

    def slow_accuracy() -> float:
        time.sleep(1.0)
        return next(figures)

    monkeypatch.setattr(wl, "test_accuracy", slow_accuracy)
    t0 = time.perf_counter()
    m = trained(wl)
    wall = time.perf_counter() - t0
    assert wl.ctx.info["eval_untimed_s"] >= 3.0  # three evaluations of a second each, none on the clock
    assert m["train_time_s"] <= wall - 3.0 and m["time_to_accuracy_s"] <= wall - 3.0
    assert met_at_the_end(m, epochs=3)
    assert m["test_accuracy"] == 0.95  # the harness's evaluation is the one already made (no fourth second)


def test_time_to_accuracy_stops_at_the_first_epoch_reaching_the_target_and_says_how_many(
        look_alike: Path, monkeypatch: pytest.MonkeyPatch):
    """MLPerf's way (make gpu-check b1): evaluated at each epoch's end, within an epoch cap; the run ends at the first
    epoch that reaches the target, whichever it is, never judged by where one epoch lands."""
    wl = prepared(look_alike, epochs=5, eval_each_epoch=True, target_accuracy=0.9)
    figures = iter([0.5, 0.95, 0.99, 0.99, 0.99])  # met at the end of the second epoch
    monkeypatch.setattr(wl, "test_accuracy", lambda: next(figures))
    m = trained(wl)
    assert m["epochs_trained"] == 2.0 and m["steps"] == 20 and m["target_met"] == 1.0  # 2 epochs of 10 batches
    assert m["time_to_accuracy_s"] == pytest.approx(m["train_time_s"], abs=0.05)
    missed = prepared(look_alike, epochs=2, eval_each_epoch=True, target_accuracy=0.9)
    monkeypatch.setattr(missed, "test_accuracy", lambda: 0.5)
    m = trained(missed)
    assert m["epochs_trained"] == 2.0 and m["target_met"] == 0.0 and "time_to_accuracy_s" not in m  # the cap, said
