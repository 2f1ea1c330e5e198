"""The parts of the CIFAR-10 training speed record's recipe (airbench94, Keller Jordan 2024: 94.01 % mean test
accuracy in 3.83 s on one A100), written for this suite from its published description.

- the network: a frozen 2x2 patch-whitening convolution (its filters the eigenvectors of the training images'
  patch covariance, and their negatives) with a trainable bias, GELU, three conv groups (conv 3x3 -> max-pool 2 ->
  BatchNorm -> GELU -> conv 3x3 -> BatchNorm -> GELU) of widths w, 4w, 4w, a 3x3 max-pool, a bias-free linear head
  scaled by 1/9. Convolutions start as identities (dirac) on their first input channels; BatchNorm has no scale,
  a running-average momentum of 0.6 (the old value's weight) and eps 1e-12.
- the optimizer: SGD-Nesterov whose learning rate and weight decay are given per 1024 images and decoupled from
  the momentum; BatchNorm biases learn 64x faster; the summed (not averaged) label-smoothed loss.
- the schedule: linear warm-up from 0.2 to 1 over the first 23 % of steps, linear decay to 0.07; lookahead every
  5 steps towards an average whose pull grows with the cube of progress, the average taken at the end.
- the data: flipped at random once, then every other epoch the whole set mirrored (alternating flip), a random
  2-pixel translation each epoch; test-time augmentation by mirror and 1-pixel translations.

Torch is imported inside the functions: discovering workloads never pays for it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

from suites.workloads.sgd import NesterovSGD, StepOptimizer

if TYPE_CHECKING:  # for the annotations only: torch is imported where it runs
    import torch
    from torch import Tensor, nn

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


def airbench94_net(in_channels: int, width: int, classes: int = 10, bn_momentum: float = 0.6,
               scale: float = 1 / 9) -> nn.Module:
    """airbench94's network for ``in_channels``-channel images at base width ``width`` (64 in airbench94)."""
    import torch
    from torch import nn

    class Scale(nn.Module):
        def forward(self, x: Tensor) -> Tensor:
            return x * scale

    def conv(c_in: int, c_out: int, kernel: int = 3, padding: int | str = "same", bias: bool = False) -> nn.Conv2d:
        layer = nn.Conv2d(c_in, c_out, kernel, padding=padding, bias=bias)
        with torch.no_grad():
            nn.init.dirac_(layer.weight[: min(c_in, c_out)])
            if bias:
                layer.bias.zero_()
        return layer

    def norm(c: int) -> nn.BatchNorm2d:
        bn = nn.BatchNorm2d(c, eps=1e-12, momentum=1 - bn_momentum)
        bn.weight.requires_grad_(False)  # no scale: stays 1
        return bn

    def group(c_in: int, c_out: int) -> nn.Sequential:
        return nn.Sequential(conv(c_in, c_out), nn.MaxPool2d(2), norm(c_out), nn.GELU(),
                             conv(c_out, c_out), norm(c_out), nn.GELU())

    whiten_width = 2 * in_channels * 2 * 2
    whiten = conv(in_channels, whiten_width, kernel=2, padding=0, bias=True)
    whiten.weight.requires_grad_(False)
    widths = (width, 4 * width, 4 * width)
    return nn.Sequential(whiten, nn.GELU(), group(whiten_width, widths[0]), group(widths[0], widths[1]),
                         group(widths[1], widths[2]), nn.MaxPool2d(3), nn.Flatten(),
                         nn.Linear(widths[2], classes, bias=False), Scale())


def whitening_filters(images: Tensor, kernel: int = 2) -> Tensor:
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


def init_whitening(conv: nn.Conv2d, images: Tensor) -> None:
    """Set a torch whitening convolution's filters from ``images`` (a tensor N, C, H, W)."""
    import torch

    filters = whitening_filters(images.float().cpu().numpy(), conv.weight.shape[-1])
    with torch.no_grad():
        conv.weight.copy_(torch.from_numpy(filters).to(conv.weight.dtype))


def dtype_of(precision: str) -> torch.dtype:
    """The torch dtype of a precision name (fp32, bf16, fp16)."""
    import torch

    return {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[precision]


def cast_weights(net: nn.Module, dtype: torch.dtype) -> nn.Module:
    """The network's weights in ``dtype`` (fp16/bf16 on a GPU, as airbench94), its BatchNorms in fp32."""
    from torch import nn

    net = net.to(dtype)
    for module in net.modules():
        if isinstance(module, nn.BatchNorm2d):
            module.float()
    return net


def decoupled_rates(hyper: Hyper, batch_size: int) -> tuple[float, float]:
    """(learning rate, weight decay per step) in the coupled form SGD takes: the per-1024-images rate over the
    momentum's step gain, and the decay given per 1024 images scaled to the batch over the same gain."""
    gain = 1024 * (1 + 1 / (1 - hyper.momentum))
    return hyper.lr / gain, hyper.weight_decay * batch_size / gain


def optimizer(net: nn.Module, hyper: Hyper, batch_size: int) -> NesterovSGD:
    """SGD-Nesterov with airbench94's decoupled settings (:func:`decoupled_rates`); torch multiplies weight decay
    by the learning rate, so each group's decay is divided by its rate. Groups: BatchNorm biases (``bias_scaler`` x
    lr), the whitening bias (frozen after its epochs by a zero rate, see :func:`set_rates`), everything else."""
    from torch import nn

    lr, decay = decoupled_rates(hyper, batch_size)
    norm_biases = [p for m in net.modules() if isinstance(m, nn.BatchNorm2d) for p in m.parameters()
                   if p.requires_grad]
    whiten_bias = [net[0].bias]
    taken = {id(p) for p in norm_biases + whiten_bias}
    rest = [p for p in net.parameters() if p.requires_grad and id(p) not in taken]
    groups = [{"params": norm_biases, "lr": lr * hyper.bias_scaler, "weight_decay": decay / (lr * hyper.bias_scaler)},
              {"params": whiten_bias, "lr": lr, "weight_decay": decay / lr},
              {"params": rest, "lr": lr, "weight_decay": decay / lr}]
    for g in groups:
        g["base_lr"] = g["lr"]
    return NesterovSGD(groups, lr=lr, momentum=hyper.momentum)


LR_START, LR_PEAK_AT, LR_END = 0.2, 0.23, 0.07  # the schedule's factor at the start, where it peaks, at the end


def lr_factor(step: int, total: int) -> float:
    """airbench94's schedule at ``step`` of ``total``: linear from LR_START to 1 at LR_PEAK_AT of the steps, then
    linear to LR_END."""
    peak = int(LR_PEAK_AT * total)
    if step < peak:
        return LR_START + (1 - LR_START) * step / peak
    return 1 + (LR_END - 1) * (step - peak) / max(1, total - peak)


def set_rates(opt: StepOptimizer, step: int, total: int, whiten_bias_live: bool) -> None:
    """Every group's learning rate for ``step``; the whitening bias (group 1) at zero once frozen (a zero rate
    rather than requires_grad=False: data-parallel ranks then keep the same gradients)."""
    factor = lr_factor(step, total)
    for i, g in enumerate(opt.param_groups):
        g["lr"] = g["base_lr"] * factor * (1.0 if i != 1 or whiten_bias_live else 0.0)


def lookahead_decays(step: int, total: int) -> list[float]:
    """The lookahead pulls after optimizer step ``step`` of ``total`` (1-based): every :data:`LOOKAHEAD_EVERY`
    steps towards an average that follows the weights with a decay of 0.95^5 x progress^3 (little averaging early,
    much late), and at the end the average itself (decay 1)."""
    pulls = [0.95**5 * (step / total) ** 3] if step % LOOKAHEAD_EVERY == 0 else []
    return pulls + ([1.0] if step == total else [])


class Lookahead:
    """airbench94's lookahead over a torch network's floating-point state (weights and BatchNorm statistics)."""

    def __init__(self, net: nn.Module) -> None:
        self.state = {k: v for k, v in net.state_dict().items() if v.is_floating_point()}
        self.average = {k: v.detach().clone() for k, v in self.state.items()}

    def after_step(self, step: int, total: int) -> None:
        import torch

        for decay in lookahead_decays(step, total):
            with torch.no_grad():
                for k, live in self.state.items():
                    avg = self.average[k]
                    avg.lerp_(live, 1 - decay)
                    live.copy_(avg)


def translate(images: Tensor, pad: int, gen: torch.Generator) -> Tensor:
    """Each image moved by a random whole-pixel offset in [-pad, pad] on both axes (reflect-padded)."""
    import torch
    import torch.nn.functional as F

    n, _, h, w = images.shape
    padded = F.pad(images, (pad,) * 4, mode="reflect")
    shifts = torch.randint(0, 2 * pad + 1, (n, 2), generator=gen, device=images.device)
    out = torch.empty_like(images)
    # (2 pad + 1)^2 selects over the batch: cheaper than a per-pixel gather, and no boolean-mask indexing, whose
    # nonzero() waits for the GPU (25 host syncs per epoch, each a stall inside the timed window)
    for dy in range(2 * pad + 1):
        for dx in range(2 * pad + 1):
            mask = ((shifts[:, 0] == dy) & (shifts[:, 1] == dx)).view(-1, 1, 1, 1)
            out = torch.where(mask, padded[:, :, dy : dy + h, dx : dx + w], out)
    return out


def random_flip(images: Tensor, gen: torch.Generator) -> Tensor:
    import torch

    flip = torch.rand(len(images), generator=gen, device=images.device) < 0.5
    return torch.where(flip.view(-1, 1, 1, 1), images.flip(-1), images)


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


def tta_logits(net: nn.Module, x: Tensor, level: int) -> Tensor:
    """:func:`tta` of a torch network on NCHW tensors."""
    import torch.nn.functional as F

    def shifted(images: Tensor) -> tuple[Tensor, Tensor]:
        h, w = images.shape[-2:]
        padded = F.pad(images, (1,) * 4, mode="reflect")
        return padded[:, :, :h, :w], padded[:, :, 2:, 2:]

    return tta(net, x, level, lambda images: images.flip(-1), shifted)
