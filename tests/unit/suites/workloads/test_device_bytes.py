"""Tests of ``suites/workloads/device_bytes.py``: a torch guest's tensors counted on the CPU, as a GPU would hold
them."""

from __future__ import annotations

import pytest
import torch

from suites.workloads.device_bytes import UNSEEN_SHARE, mnist_torch_peak_MiB

# M60-1Q's framebuffer less the CUDA context an H200 measured for a torch guest: what the guest's tensors may take.
M60_1Q_SHARE_MiB = 1024 - 684


@pytest.mark.heavy
def test_a_capped_m60_1q_guest_trains_and_evaluates_within_its_share_with_room_for_cudnn():
    """On an H200 mnist-torch under m60-1q's cap stopped at its 340 MiB share (290 MiB held, 42 more asked): its
    evaluation batch of 2,000 held ~257 MiB with the data, more than a training step at 512 (~230). A capped guest
    evaluates in batches of at most its training batch, so the whole peak (data, weights, a step's activations and
    gradients, the evaluation) leaves the share's unseen part for cuDNN's workspace and the allocator's rounding."""
    torch.set_num_threads(2)
    peak = mnist_torch_peak_MiB(framebuffer_MiB=1024)
    assert peak <= (1 - UNSEEN_SHARE) * M60_1Q_SHARE_MiB, f"{peak:.0f} MiB at the peak"
