"""What a torch guest's tensors hold at their peak, counted on the CPU: the same code on a GPU holds the same tensors
(data, weights, a step's activations and gradients, the evaluation), so a host without a GPU can tell whether a
workload fits a profile's framebuffer before a GPU says "framebuffer cap exceeded". Not counted: the CUDA context
(the device file's figure), cuDNN's workspaces and the caching allocator's rounding (:data:`UNSEEN_SHARE`)."""

from __future__ import annotations

import weakref
from types import SimpleNamespace
from typing import Any

import numpy as np

from suites.data.mnist import MNIST
from suites.workloads.base import GuestContext
from suites.workloads.mnist_torch import MnistTorch, MnistTorchConfig

__all__ = ["UNSEEN_SHARE", "live_bytes", "mnist_torch_peak_MiB", "zeros_mnist"]

MiB = 2**20
# The part of a guest's allocator share (its framebuffer less the context) that the count leaves free: on an H200,
# cuDNN's workspaces and the allocator's blocks took ~75 MiB beyond the count (m60-1q: 257 MiB counted, 290 held and
# 42 more asked of its 340 MiB share).
UNSEEN_SHARE = 0.3


def live_bytes() -> Any:
    """A dispatch mode that counts every storage an op makes, once while any tensor on it lives (views and in-place
    results share their base's): ``.peak`` is what the same code would hold on a device, the tensors it keeps
    included. (Made here so that torch is imported only by what counts.)"""
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    class LiveBytes(TorchDispatchMode):
        def __init__(self) -> None:
            super().__init__()
            self.live = self.peak = 0
            self.refs: dict[int, int] = {}

        def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            out = func(*args, **(kwargs or {}))
            for t in out if isinstance(out, (tuple, list)) else (out,):
                if isinstance(t, torch.Tensor) and t.device.type == "cpu":
                    storage = t.untyped_storage()
                    ptr, nbytes = storage.data_ptr(), storage.nbytes()
                    if ptr not in self.refs:
                        self.refs[ptr] = 0
                        self.live += nbytes
                        self.peak = max(self.peak, self.live)
                    self.refs[ptr] += 1
                    weakref.finalize(t, self.freed, ptr, nbytes)
            return out

        def freed(self, ptr: int, nbytes: int) -> None:
            self.refs[ptr] -= 1
            if not self.refs[ptr]:
                del self.refs[ptr]
                self.live -= nbytes

    return LiveBytes()


def zeros_mnist(n_train: int = 60_000) -> SimpleNamespace:
    """MNIST's real split sizes as zeros: what is counted is bytes, not accuracy."""
    splits = {True: (np.zeros((n_train, 28, 28), np.uint8), np.zeros(n_train, np.uint8)),
              False: (np.zeros((10_000, 28, 28), np.uint8), np.zeros(10_000, np.uint8))}
    return SimpleNamespace(mean=MNIST.mean, std=MNIST.std, load_uint8=lambda root, train: splits[train], real_train=0)


def mnist_torch_peak_MiB(framebuffer_MiB: int | None = 1024, steps: int = 2) -> float:
    """mnist-torch with all 60,000 images at its default batch, under a framebuffer cap: the peak of its tensors
    while it loads, trains ``steps`` steps and evaluates (its first two test batches: every later one holds what the
    second does: the whole evaluation was 2 s more of CPU on 2 cores, for the same peak within 0.2 MiB)."""
    guest_cls = type("ZerosMnistTorch", (MnistTorch,), {"dataset": zeros_mnist()})
    guest = guest_cls(MnistTorchConfig(target_accuracy=None, epochs=1),
                      GuestContext("g0", [0], [], framebuffer_MiB, {"root": "unused"}, 0))
    import torch

    with live_bytes() as run:
        guest.prepare()
        batches = guest.batches(0, torch.Generator().manual_seed(0))
        for step in range(steps):
            guest.train_step(*next(batches), step, max(1, 60_000 // guest.cfg.batch_size))
        del batches
        guest.test_accuracy(batches=2)
    return run.peak / MiB
