"""SGD with Nesterov momentum and coupled weight decay, step for step what ``torch.optim.SGD(..., momentum=m,
nesterov=True)`` computes (its multi-tensor path: the same ``torch._foreach_*`` operations in the same order; on the
CPU those run the single-tensor operations of its other path), without ``torch.optim``'s Optimizer: that class
imports ``torch._dynamo`` when it is built and again on each step, 2.6 s of CPU on a 2-core host (torch's own import
takes 2.3 s), paid by every guest and every rank before its start barrier whether it compiles anything or not.
tests/unit/suites/workloads/test_sgd.py holds it to torch's optimizer, bit for bit.

Torch is imported inside the functions: discovering workloads never pays for it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import torch

Group = dict[str, Any]


class StepOptimizer(Protocol):
    """What the training loop needs of an optimizer (torch's have it too)."""

    param_groups: list[Group]

    def step(self) -> Any: ...

    def zero_grad(self, set_to_none: bool = True) -> None: ...


class NesterovSGD:
    """Param groups (each its ``params`` and optionally ``lr``, ``weight_decay`` and any other key, kept as given),
    a learning rate and a momentum for the groups that do not set theirs; ``param_groups`` may be changed between
    steps, as with torch's optimizers (the schedule sets each group's ``lr``)."""

    def __init__(self, groups: Iterable[Group], lr: float, momentum: float) -> None:
        if not 0.0 < momentum < 1.0:
            raise ValueError(f"momentum {momentum}: Nesterov momentum needs 0 < momentum < 1")
        self.param_groups: list[Group] = [{"lr": lr, "momentum": momentum, "weight_decay": 0.0, **g,
                                           "params": list(g["params"])} for g in groups]
        self.state: dict[torch.Tensor, torch.Tensor] = {}  # each parameter's momentum buffer, once it has one

    def zero_grad(self, set_to_none: bool = True) -> None:
        for g in self.param_groups:
            for p in g["params"]:
                if p.grad is None:
                    continue
                if set_to_none:
                    p.grad = None
                else:
                    p.grad.detach_().zero_()

    def step(self) -> None:
        import torch

        with torch.no_grad():
            for g in self.param_groups:
                alike: dict[tuple[object, object], list[torch.Tensor]] = {}  # torch's grouping: one device, one dtype
                for p in g["params"]:
                    if p.grad is not None:
                        alike.setdefault((p.device, p.dtype), []).append(p)
                for params in alike.values():  # each list one fused launch per operation on a GPU
                    self._step(params, g["lr"], g["momentum"], g["weight_decay"])

    def _step(self, params: list[torch.Tensor], lr: float, momentum: float, decay: float) -> None:
        import torch

        grads = [p.grad for p in params]
        if decay != 0:
            grads = torch._foreach_add(grads, params, alpha=decay)
        bufs = [self.state.get(p) for p in params]
        if all(b is not None for b in bufs):
            torch._foreach_mul_(bufs, momentum)
            torch._foreach_add_(bufs, grads, alpha=1)  # torch's 1 - dampening, dampening 0
        else:  # the first step: each buffer starts as its gradient
            for i, p in enumerate(params):
                if bufs[i] is None:
                    bufs[i] = self.state[p] = torch.clone(grads[i]).detach()
                else:
                    bufs[i].mul_(momentum).add_(grads[i], alpha=1)
        torch._foreach_add_(grads, bufs, alpha=momentum)  # Nesterov: the gradient plus the momentum's look-ahead
        torch._foreach_add_(params, grads, alpha=-lr)
