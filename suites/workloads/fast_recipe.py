"""The numbers and maths of airbench94's recipe that its torch workload (:mod:`suites.workloads.airbench94`, where
the recipe is read whole) and the Keras one (:mod:`suites.workloads.keras_net`) share, framework-free: the
optimizer's decoupled settings, the schedule, the lookahead's pulls, the whitening filters (numpy), test-time
augmentation over any framework's batches."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    import numpy as np

Batch = TypeVar("Batch")  # a batch of images in any framework (tta serves torch and Keras)
LOOKAHEAD_EVERY = 5  # steps between lookahead updates
WHITEN_EPS = 5e-4  # added to the patch covariance's eigenvalues before the inverse square root
WHITEN_IMAGES = 5000  # training images the whitening filters are estimated from


@dataclass(frozen=True)
class Hyper:
    """The optimizer's settings in airbench94's decoupled form."""

    lr: float = 11.5  # per 1024 images
    momentum: float = 0.85
    weight_decay: float = 0.0153  # per 1024 images, decoupled from the learning rate
    bias_scaler: float = 64.0  # BatchNorm biases' learning rate multiple (not their weight decay)


def whitening_filters(images: np.ndarray, kernel: int = 2) -> np.ndarray:
    """The whitening filters (2 C k^2, C, k, k) for ``images`` (numpy N, C, H, W, normalised): the eigenvectors of
    the covariance of their k x k patches, largest first, each divided by the square root of its eigenvalue, and
    their negatives (so GELU passes both signs). numpy, so the torch and the Keras workloads share it."""
    import numpy as np
    from numpy.lib.stride_tricks import sliding_window_view

    c = images.shape[1]
    cov = np.zeros((c * kernel * kernel,) * 2)
    for chunk in range(0, len(images), 500):  # patches of 500 images at a time: bounded memory
        windows = sliding_window_view(images[chunk : chunk + 500], (kernel, kernel), axis=(2, 3))
        flat = windows.transpose(0, 2, 3, 1, 4, 5).reshape(-1, c * kernel * kernel).astype(np.float64)
        cov += flat.T @ flat
    n = len(images) * (images.shape[2] - kernel + 1) * (images.shape[3] - kernel + 1)
    eigenvalues, eigenvectors = np.linalg.eigh(cov / n)
    filters = eigenvectors.T[::-1].reshape(-1, c, kernel, kernel) / np.sqrt(eigenvalues[::-1] + WHITEN_EPS)[
        :, None, None, None]
    return np.concatenate([filters, -filters]).astype(np.float32)


def decoupled_rates(hyper: Hyper, batch_size: int) -> tuple[float, float]:
    """(learning rate, weight decay per step) in the coupled form SGD takes: the per-1024-images rate over the
    momentum's step gain, and the decay given per 1024 images scaled to the batch over the same gain."""
    gain = 1024 * (1 + 1 / (1 - hyper.momentum))
    return hyper.lr / gain, hyper.weight_decay * batch_size / gain


LR_START, LR_PEAK_AT, LR_END = 0.2, 0.23, 0.07  # the schedule's factor at the start, where it peaks, at the end


def lr_factor(step: int, total: int) -> float:
    """airbench94's schedule at ``step`` of ``total``: linear from LR_START to 1 at LR_PEAK_AT of the steps, then
    linear to LR_END."""
    peak = int(LR_PEAK_AT * total)
    if step < peak:
        return LR_START + (1 - LR_START) * step / peak
    return 1 + (LR_END - 1) * (step - peak) / max(1, total - peak)


def lookahead_decays(step: int, total: int) -> list[float]:
    """The lookahead pulls after optimizer step ``step`` of ``total`` (1-based): every :data:`LOOKAHEAD_EVERY`
    steps towards an average that follows the weights with a decay of 0.95^5 x progress^3 (little averaging early,
    much late), and at the end the average itself (decay 1)."""
    pulls = [0.95**5 * (step / total) ** 3] if step % LOOKAHEAD_EVERY == 0 else []
    return pulls + ([1.0] if step == total else [])


def tta(predict: Callable[[Batch], Batch], x: Batch, level: int, mirror: Callable[[Batch], Batch],
        shifted: Callable[[Batch], tuple[Batch, Batch]]) -> Batch:
    """Test-time augmentation over any framework's batches: 0 none, 1 the mean with the mirror image, 2 also the
    mean over the two 1-pixel diagonal translations ``shifted`` gives (as airbench94)."""

    def mirrored(inputs: Batch) -> Batch:
        return 0.5 * predict(inputs) + 0.5 * predict(mirror(inputs)) if level >= 1 else predict(inputs)

    logits = mirrored(x)
    if level < 2:
        return logits
    up_left, down_right = shifted(x)
    return 0.5 * logits + 0.5 * (0.5 * mirrored(up_left) + 0.5 * mirrored(down_right))
