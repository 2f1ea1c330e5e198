"""Tests of ``suites/workloads/airbench94.py``: what a guest holds on its device while it loads and trains."""

from __future__ import annotations

import weakref
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from suites.data.mnist import MNIST
from suites.workloads.airbench94 import CHUNK_BYTES, chunk_batches
from suites.workloads.base import GuestContext
from suites.workloads.mnist_torch import MnistTorch, MnistTorchConfig

MiB = 2**20
# M60-1Q's framebuffer less the CUDA context an H200 measured for a torch guest (docs/gpu-check.md, c2: 340 MiB
# allocator share): what the guest's tensors may take.
M60_1Q_SHARE_MiB = 1024 - 684


class LiveBytes(TorchDispatchMode):
    """Every storage an op makes, counted once while any tensor on it lives (views and in-place results share their
    base's): the peak of what the same code would hold on a device, the tensors it keeps included."""

    def __init__(self) -> None:
        super().__init__()
        self.live = self.peak = 0
        self.refs: dict[int, int] = {}

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
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


def mnist_guest(monkeypatch: pytest.MonkeyPatch, n_train: int = 60_000) -> MnistTorch:
    """mnist-torch with MNIST's real split sizes (zeros: what is measured is bytes, not accuracy), on the CPU."""
    splits = {True: (np.zeros((n_train, 28, 28), np.uint8), np.zeros(n_train, np.uint8)),
              False: (np.zeros((10_000, 28, 28), np.uint8), np.zeros(10_000, np.uint8))}
    data = SimpleNamespace(mean=MNIST.mean, std=MNIST.std, load_uint8=lambda root, train: splits[train], real_train=0)
    monkeypatch.setattr(MnistTorch, "dataset", data)
    cfg = MnistTorchConfig(target_accuracy=None, epochs=1)
    return MnistTorch(cfg, GuestContext("g0", [0], [], None, {"root": "unused"}, 0))


def test_a_guest_with_all_60000_mnist_images_stays_within_m60_1qs_share(monkeypatch: pytest.MonkeyPatch):
    """cce1a94 normalised the whole split on the device: ~565 MB of fp32 temporaries while loading."""
    torch.set_num_threads(1)
    guest = mnist_guest(monkeypatch)
    with LiveBytes() as load:
        guest.prepare()
        kept = sum(t.untyped_storage().nbytes() for t in (guest.x_train, guest.y_train, guest.x_test, guest.y_test))
    assert guest.x_train.dtype == torch.uint8 and len(guest.x_train) == 60_000
    gen = torch.Generator().manual_seed(0)
    with LiveBytes() as epoch:
        for _ in guest.batches(0, gen):
            pass
    peak_MiB = (kept + max(load.peak - kept, epoch.peak)) / MiB  # the kept split and the larger of the temporaries
    assert peak_MiB < M60_1Q_SHARE_MiB / 2, f"{peak_MiB:.0f} MiB of data and temporaries"  # room for the model
    assert epoch.peak <= 8 * CHUNK_BYTES  # a chunk's floats, flip and translate: never a whole-split copy


def test_the_split_is_cut_to_the_limit_and_the_ranks_shard_before_it_reaches_the_device(
        monkeypatch: pytest.MonkeyPatch):
    guest = mnist_guest(monkeypatch, n_train=1000)
    guest.cfg.train_limit = 600
    guest.ctx.rank, guest.ctx.world_size = 1, 2
    guest.device = torch.device("cpu")
    x, y, _, _ = guest.load_data()
    assert len(x) == len(y) == 300  # rows 300..599: rank 1's half of the first 600


def test_a_chunk_is_some_batches_of_images_within_its_bytes():
    assert chunk_batches(28 * 28, 512) == 10  # MNIST: 5,120 images of fp32, 16 MiB at most
    assert chunk_batches(3 * 32 * 32, 1024) == 4  # CIFAR-10: at least 4 batches
