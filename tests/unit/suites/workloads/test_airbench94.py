"""Tests of ``suites/workloads/airbench94.py``: what a guest holds on its device while it loads and trains."""

from __future__ import annotations

import pytest
import torch

from suites.workloads.airbench94 import CHUNK_BYTES, chunk_batches
from suites.workloads.base import GuestContext
from suites.workloads.device_bytes import live_bytes, zeros_mnist
from suites.workloads.mnist_torch import MnistTorch, MnistTorchConfig

MiB = 2**20
# M60-1Q's framebuffer less the CUDA context an H200 measured for a torch guest (docs/gpu-check.md, c2: 340 MiB
# allocator share): what the guest's tensors may take.
M60_1Q_SHARE_MiB = 1024 - 684


def mnist_guest(monkeypatch: pytest.MonkeyPatch, n_train: int = 60_000) -> MnistTorch:
    """mnist-torch with MNIST's real split sizes (zeros: what is measured is bytes, not accuracy), on the CPU."""
    monkeypatch.setattr(MnistTorch, "dataset", zeros_mnist(n_train))
    cfg = MnistTorchConfig(target_accuracy=None, epochs=1)
    return MnistTorch(cfg, GuestContext("g0", [0], [], None, {"root": "unused"}, 0))


def test_a_guest_with_all_60000_mnist_images_stays_within_m60_1qs_share(monkeypatch: pytest.MonkeyPatch):
    """cce1a94 normalised the whole split on the device: ~565 MB of fp32 temporaries while loading."""
    torch.set_num_threads(1)
    guest = mnist_guest(monkeypatch)
    with live_bytes() as load:
        guest.prepare()
        kept = sum(t.untyped_storage().nbytes() for t in (guest.x_train, guest.y_train, guest.x_test, guest.y_test))
    assert guest.x_train.dtype == torch.uint8 and len(guest.x_train) == 60_000
    gen = torch.Generator().manual_seed(0)
    with live_bytes() as epoch:
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
