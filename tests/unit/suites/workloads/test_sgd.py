"""Tests of ``suites/workloads/sgd.py``."""

from __future__ import annotations

import copy

import pytest
import torch

from suites.workloads import airbench94 as recipe
from suites.workloads.fast_recipe import Hyper
from suites.workloads.sgd import NesterovSGD


def trained_pair(steps: int, decay_scale: float) -> tuple[torch.nn.Module, torch.nn.Module, dict]:
    """The record's net and a copy, one stepped by the recipe's optimizer and one by torch's SGD over the same
    batches, with the recipe's schedule (the whitening bias frozen half-way: a zero learning rate); and the weights
    both started from."""
    torch.manual_seed(0)
    ours_net = recipe.airbench94_net(3, 4)
    torch_net = copy.deepcopy(ours_net)
    start = copy.deepcopy(ours_net.state_dict())
    ours = recipe.optimizer(ours_net, Hyper(momentum=0.85), batch_size=64)
    for g in ours.param_groups:
        g["weight_decay"] *= decay_scale
    twin = {id(p): q for p, q in zip(ours_net.parameters(), torch_net.parameters(), strict=True)}
    theirs = torch.optim.SGD([{**g, "params": [twin[id(p)] for p in g["params"]]} for g in ours.param_groups],
                             lr=1.0, momentum=0.85, nesterov=True)
    gen = torch.Generator().manual_seed(1)
    for step in range(steps):
        x, y = torch.randn(64, 3, 32, 32, generator=gen), torch.randint(0, 10, (64,), generator=gen)
        for net, opt in ((ours_net, ours), (torch_net, theirs)):
            recipe.set_rates(opt, step, steps, whiten_bias_live=step < steps // 2)
            opt.zero_grad(set_to_none=True)
            torch.nn.functional.cross_entropy(net(x), y, label_smoothing=0.2, reduction="sum").backward()
            opt.step()
    return ours_net, torch_net, start


@pytest.mark.heavy
@pytest.mark.parametrize("decay_scale", [1.0, 0.0])
def test_the_recipes_sgd_steps_exactly_as_torchs_nesterov_sgd(decay_scale: float):
    ours, theirs, start = trained_pair(6, decay_scale)
    moved = 0
    for (name, p), q in zip(ours.named_parameters(), theirs.parameters(), strict=True):
        assert torch.equal(p, q), name
        moved += p.requires_grad and not torch.equal(p, start[name])
    assert moved >= 3  # equal because both moved alike, not because neither moved


def test_a_group_of_mixed_dtypes_steps_each_dtype_as_torch_does():
    """The record keeps BatchNorm in fp32 beside fp16 weights: one group may hold both."""
    ours = [torch.nn.Parameter(torch.linspace(-1, 1, 5, dtype=dt)) for dt in (torch.float32, torch.float64)]
    theirs = [torch.nn.Parameter(p.detach().clone()) for p in ours]
    opts = (NesterovSGD([{"params": ours, "weight_decay": 0.01}], lr=0.1, momentum=0.9),
            torch.optim.SGD([{"params": theirs, "weight_decay": 0.01}], lr=0.1, momentum=0.9, nesterov=True))
    for step in range(3):
        for params, opt in zip((ours, theirs), opts, strict=True):
            opt.zero_grad()
            sum(((p - step) ** 2).sum() for p in params).backward()
            opt.step()
    assert all(torch.equal(p, q) and p.dtype == q.dtype for p, q in zip(ours, theirs, strict=True))
    assert not torch.equal(ours[0], torch.linspace(-1, 1, 5))


def test_zero_grad_keeps_or_drops_the_gradients_and_a_bad_momentum_is_refused():
    p = torch.nn.Parameter(torch.ones(3))
    opt = NesterovSGD([{"params": [p]}], lr=0.1, momentum=0.9)
    p.grad = torch.ones(3)
    opt.zero_grad(set_to_none=False)
    assert torch.equal(p.grad, torch.zeros(3))
    opt.zero_grad()
    assert p.grad is None
    opt.step()  # no gradient: nothing moves, no buffer made
    assert torch.equal(p, torch.ones(3)) and not opt.state
    with pytest.raises(ValueError, match="momentum 0"):
        NesterovSGD([{"params": [p]}], lr=0.1, momentum=0)
