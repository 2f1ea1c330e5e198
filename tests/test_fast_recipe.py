"""The record's recipe as the torch workloads run it: learning to its target on a learnable CIFAR-shaped set,
time to accuracy without the evaluations, the schedule and momentum it states, its data augmentation, whitening
and lookahead."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import torch

from suites.data import cifar
from suites.workloads import fast_recipe as recipe
from suites.workloads.base import GuestContext, StepMeter
from suites.workloads.cifar10_torch import Cifar10Torch, Cifar10TorchConfig
from suites.workloads.mnist_torch import MnistTorch, MnistTorchConfig

from .helpers import HAVE_MNIST, MNIST_ROOT


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


@pytest.mark.e2e  # trains, renders or waits for real (seconds)
def test_the_record_recipe_reaches_its_target_on_a_learnable_cifar_shaped_set(look_alike: Path):
    wl = prepared(look_alike, epochs=5)
    m = trained(wl)
    assert m["steps"] == 50 and m["images"] == 5000  # 5 epochs of 10 whole batches (the last partial one dropped)
    assert m["target_accuracy"] == 0.94 and m["target_met"] == 1.0 and m["test_accuracy"] >= 0.94
    assert m["time_to_accuracy_s"] == pytest.approx(m["train_time_s"], abs=0.05)  # checked at the end, as the record
    assert wl.ctx.info["precision"] == "fp32" and wl.ctx.info["framebuffer_cap"] == "not applied (no GPU)"


@pytest.mark.e2e  # trains, renders or waits for real (seconds)
def test_a_diverged_run_fails_with_its_reason_not_ok_at_chance(look_alike: Path):
    diverged = r"^training diverged: loss nan after 10 steps \(workload.lr=1e\+30, precision fp32\)$"
    with pytest.raises(RuntimeError, match=diverged):
        trained(prepared(look_alike, lr=1e30))  # checked at the end of the first epoch


@pytest.mark.e2e  # trains, renders or waits for real (seconds)
def test_a_missed_target_is_said_and_has_no_time_to_accuracy(look_alike: Path):
    m = trained(prepared(look_alike, epochs=0.1, target_accuracy=0.999))  # one step: nowhere near it
    assert m["steps"] == 1 and m["target_met"] == 0.0 and "time_to_accuracy_s" not in m


@pytest.mark.e2e  # trains, renders or waits for real (seconds)
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
    assert m["time_to_accuracy_s"] == pytest.approx(m["train_time_s"], abs=0.05)
    assert m["test_accuracy"] == 0.95  # the harness's evaluation is the one already made (no fourth second)


def test_momentum_is_as_configured_through_the_schedule_and_the_rate_follows_its_triangle():
    net = recipe.airbench94_net(3, 4)
    opt = recipe.optimizer(net, recipe.Hyper(momentum=0.85), batch_size=256)
    total, seen = 100, {}
    for step in (0, 23, 99):  # start, peak, end
        recipe.set_rates(opt, step, total, whiten_bias_live=step < 50)
        seen[step] = [(g["momentum"], g["lr"] / g["base_lr"]) for g in opt.param_groups]
    assert all(m == 0.85 for rows in seen.values() for m, _ in rows)
    assert [f for _, f in seen[0]] == pytest.approx([0.2, 0.2, 0.2])
    assert [f for _, f in seen[23]] == pytest.approx([1.0, 1.0, 1.0])
    assert [f for _, f in seen[99]] == pytest.approx([1.0 - 0.93 * 76 / 77, 0.0, 1.0 - 0.93 * 76 / 77])  # frozen bias
    gain = 1024 * (1 + 1 / 0.15)
    assert opt.param_groups[2]["base_lr"] == pytest.approx(11.5 / gain)
    assert opt.param_groups[0]["base_lr"] == pytest.approx(64 * 11.5 / gain)  # BatchNorm biases


def test_translation_moves_whole_images_and_flips_mirror_them():
    gen = torch.Generator().manual_seed(0)
    x = torch.arange(4 * 3 * 8 * 8, dtype=torch.float32).view(4, 3, 8, 8)
    moved = recipe.translate(x, 2, gen)
    assert moved.shape == x.shape and not torch.equal(moved, x)
    # each row of the centre is a run of consecutive pixels of one input row: a whole-pixel shift, per image
    assert torch.all((moved[:, :, 2:-2, 3:-2] - moved[:, :, 2:-2, 2:-3]).abs() == 1)
    flipped = recipe.random_flip(x, gen)
    assert all(torch.equal(f, i) or torch.equal(f, i.flip(-1)) for f, i in zip(flipped, x, strict=True))


def test_whitening_filters_decorrelate_the_patches_they_were_fitted_on():
    gen = torch.Generator().manual_seed(0)
    mix = torch.randn(3, 3, generator=gen)
    images = torch.einsum("nchw,dc->ndhw", torch.randn(200, 3, 16, 16, generator=gen), mix)  # correlated channels
    net = recipe.airbench94_net(3, 4)
    recipe.init_whitening(net[0], images)
    out = torch.nn.functional.conv2d(images, net[0].weight[:12])  # the positive half of the filters
    flat = out.permute(0, 2, 3, 1).reshape(-1, 12)
    cov = flat.T @ flat / len(flat)
    assert torch.allclose(torch.diagonal(cov), torch.ones(12), atol=0.05)  # unit variance...
    assert (cov - torch.diag(torch.diagonal(cov))).abs().max() < 0.05  # ...and uncorrelated


def test_lookahead_ends_on_its_average():
    net = torch.nn.Linear(2, 1, bias=False)
    la = recipe.Lookahead(net)
    start = net.weight.detach().clone()
    with torch.no_grad():
        net.weight.add_(1.0)
    la.after_step(4, 10)  # not a lookahead step: the weights are left alone
    assert torch.equal(net.weight, start + 1)
    la.after_step(5, 10)  # pulled towards the average (decay 0.95^5 x 0.5^3)
    decay = 0.95**5 * 0.125
    assert torch.allclose(net.weight, start + (1 - decay))
    with torch.no_grad():
        net.weight.add_(1.0)
    la.after_step(10, 10)
    assert torch.equal(net.weight, la.average["weight"])  # the end: the average taken


@pytest.mark.skipif(not HAVE_MNIST, reason=f"real MNIST not found under {MNIST_ROOT} (set BENCH_TEST_MNIST_ROOT)")
def test_real_mnist_gradients_outgrow_fp16_so_mnist_keeps_fp32_weights_on_a_gpu():
    """The record's fp16 diverged on real MNIST on an H200 (nan after one epoch; bf16 kept the range but reached
    35.5 %): the first step's gradients, taken in fp32, are past fp16's largest number."""
    import torch.nn.functional as F

    from suites.data.mnist import MNIST

    torch.manual_seed(0)
    images, labels = MNIST.load_uint8(str(MNIST_ROOT), True)
    x = (torch.from_numpy(images[:512].copy()).unsqueeze(1).float() / 255 - MNIST.mean[0]) / MNIST.std[0]
    cfg = MnistTorchConfig()
    net = recipe.airbench94_net(1, cfg.width)
    recipe.init_whitening(net[0], (torch.from_numpy(images[:5000].copy()).unsqueeze(1).float() / 255
                                   - MNIST.mean[0]) / MNIST.std[0])
    loss = F.cross_entropy(net(x), torch.from_numpy(labels[:512].astype("int64")),
                           label_smoothing=cfg.label_smoothing, reduction="sum")
    loss.backward()
    largest = max(float(p.grad.abs().max()) for p in net.parameters() if p.grad is not None)
    assert torch.finfo(torch.float16).max < largest < torch.finfo(torch.float32).max
    assert MnistTorch.gpu_precision == "fp32"
