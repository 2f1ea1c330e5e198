"""airbench94's recipe, the CIFAR-10 training speed record (Keller Jordan 2024: 94.01 % mean test
accuracy in 3.83 s on one A100), written for this suite from its published description, as a guest workload
for any image dataset; read here whole, as airbench keeps its recipe (the framework-free numbers it shares
with the Keras workload are in :mod:`suites.workloads.fast_recipe`; the timed loop that drives every torch
classifier, with its meter and evaluations off the clock, is :meth:`TorchClassifier.train`).

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

``cifar10-torch`` and ``mnist-torch`` are this class with their dataset and defaults. Torch is imported inside
the functions: discovering workloads never pays for it.

The data stays on the device as the data set's bytes (uint8, a quarter of fp32) and is normalised and augmented a
chunk of batches at a time, where airbench94 normalises the whole split and augments the whole epoch at once:
that held MNIST's 60,000 images as ~565 MB of fp32 temporaries at loading, past M60-1Q's ~340 MiB left after
the CUDA context. Now the device holds the split's bytes and one chunk's floats (:data:`CHUNK_BYTES`)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from suites.errors import require
from suites.workloads import fast_recipe as recipe
from suites.workloads.base import TrainConfig
from suites.workloads.sgd import NesterovSGD, StepOptimizer
from suites.workloads.torch_common import TorchClassifier, TorchTrainConfig

if TYPE_CHECKING:  # for the annotations only: torch is imported where it runs
    import contextlib

    import numpy as np
    import torch
    from torch import Tensor, nn
    from torch.optim.lr_scheduler import LRScheduler


@dataclass
class RecipeConfig(TrainConfig):
    """airbench94's settings, shared by the torch and the Keras workloads."""

    batch_size: int = 1024
    lr: float = 11.5  # SGD-Nesterov, per 1024 images and decoupled from the momentum (airbench94's form)
    momentum: float = 0.85  # constant: no schedule cycles it
    weight_decay: float = 0.0153  # per 1024 images, decoupled from the learning rate
    bias_scaler: float = 64.0  # BatchNorm biases learn this much faster
    width: int = 64  # conv groups of width, 4 x width, 4 x width channels
    label_smoothing: float = 0.2
    whiten_bias_epochs: int = 3  # the whitening layer's bias trains this many epochs, then stays
    translate: int = 2  # random translation, pixels
    flip: bool = True  # alternating flip: random once, then the whole set mirrored every other epoch
    tta_level: int = 2  # test-time augmentation: 0 none, 1 mirror, 2 mirror + 1-pixel translations
    eval_each_epoch: bool = False  # airbench94 checks once, at the end of its fixed schedule
    eval_batch_size: int = 2000

    def check(self) -> None:
        super().check()
        require(0 < self.momentum < 1, "workload.momentum", f"must be in (0, 1), got {self.momentum}")
        require(self.weight_decay >= 0, "workload.weight_decay", f"must be >= 0, got {self.weight_decay}")
        require(self.tta_level in (0, 1, 2), "workload.tta_level", f"must be 0, 1 or 2, got {self.tta_level}")
        require(0 <= self.translate <= 8, "workload.translate", f"must be 0..8, got {self.translate}")

    def hyper(self) -> recipe.Hyper:
        return recipe.Hyper(lr=self.lr, momentum=self.momentum, weight_decay=self.weight_decay,
                            bias_scaler=self.bias_scaler)


@dataclass
class Airbench94TrainConfig(RecipeConfig, TorchTrainConfig):
    # dataclass fields merge base by base, each with the fields it inherited: the recipe's values come last and
    # win, so the framework's own are named again
    framework: str = "torch"


class Airbench94Classifier(TorchClassifier):
    """A dataset's images through airbench94's network and step (subclasses name the dataset and defaults)."""

    drop_last = True
    gpu_precision = "fp16"  # airbench94 keeps its weights in fp16 on a GPU

    def weights_dtype(self) -> torch.dtype:
        return dtype_of(self.precision())

    def autocast(self) -> contextlib.AbstractContextManager[object]:
        import contextlib

        return contextlib.nullcontext()  # the weights themselves are in the run's precision

    def load_data(self) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        """Both splits' bytes on the device (NCHW uint8): the training split cut to this rank's rows first."""
        import torch

        assert self.dataset is not None
        self.mean = torch.tensor(self.dataset.mean, device=self.device).view(1, -1, 1, 1) * 255.0
        self.std = torch.tensor(self.dataset.std, device=self.device).view(1, -1, 1, 1) * 255.0
        out = []
        for train in (True, False):
            images, labels = self.dataset.load_uint8(self.ctx.data["root"], train)
            if train:
                rows = self.train_rows(len(images))
                images, labels = images[rows], labels[rows]
            out += [nchw_bytes(torch, images).to(self.device), torch.from_numpy(labels.astype("int64")).to(self.device)]
        self.ctx.info["precision_detail"] = (f"{self.precision()} weights and inputs (the data kept as uint8 on the "
                                             "device, normalised per chunk of batches), BatchNorm fp32")
        return tuple(out)  # type: ignore[return-value]

    def inputs(self, x: Tensor) -> Tensor:
        """Stored bytes -> the model's normalised input in the run's precision."""
        import torch

        return x.to(torch.float32).sub_(self.mean).div_(self.std).to(self.weights_dtype())

    def build_model(self) -> nn.Module:
        net = airbench94_net(self.x_train.shape[1], self.cfg.width).to(self.device)
        init_whitening(net[0], self.inputs(self.x_train[: recipe.WHITEN_IMAGES]))
        return cast_weights(net, self.weights_dtype())

    def make_optimizer(self, model: nn.Module, total_steps: int) -> tuple[StepOptimizer, LRScheduler | None]:
        self.lookahead = Lookahead(self.net)  # after the whitening filters are set: they are averaged too
        return optimizer(self.net, self.cfg.hyper(), self.cfg.batch_size), None

    def batches(self, epoch: int, gen: torch.Generator) -> Iterator[tuple[Tensor, Tensor]]:
        """Whole batches of a fresh order, normalised and augmented a chunk of batches at a time: each image flipped
        at random once (drawn at the first epoch), the whole set mirrored every other epoch, translated anew each
        epoch."""
        import torch

        c = self.cfg
        self.epoch = epoch
        n, bs = len(self.x_train), c.batch_size
        if epoch == 0:
            self.flipped = torch.rand(n, generator=gen, device=self.device) < 0.5 if c.flip else None
        order = torch.randperm(n, generator=gen, device=self.device)
        steps, per_chunk = max(1, n // bs), chunk_batches(self.x_train[0].numel(), bs)
        for first in range(0, steps, per_chunk):
            idx = order[first * bs: min(steps, first + per_chunk) * bs]
            images = self.inputs(self.x_train[idx])
            if self.flipped is not None:
                mirror = self.flipped[idx] ^ (epoch % 2 == 1)
                images = torch.where(mirror.view(-1, 1, 1, 1), images.flip(-1), images)
            if c.translate:
                images = translate(images, c.translate, gen)
            if c.channels_last:
                images = images.contiguous(memory_format=torch.channels_last)
            labels = self.y_train[idx]
            for j in range(max(1, len(idx) // bs)):
                yield images[j * bs: (j + 1) * bs], labels[j * bs: (j + 1) * bs]

    def train_step(self, x: Tensor, y: Tensor, step: int, total: int) -> Tensor:
        import torch.nn.functional as F

        set_rates(self.opt, step, total, whiten_bias_live=self.epoch < self.cfg.whiten_bias_epochs)
        out = self.model(x)
        loss = F.cross_entropy(out.float(), y, label_smoothing=self.cfg.label_smoothing, reduction="sum")
        self.opt.zero_grad(set_to_none=True)
        loss.backward()
        self.opt.step()
        self.lookahead.after_step(step + 1, total)
        return loss

    def logits(self, x: Tensor) -> Tensor:
        return tta_logits(self.net, x, self.cfg.tta_level)


# How much of the epoch is normalised and augmented at once, as fp32 bytes: the device's temporaries while batches are
# made are a few times this (the fp32 images, the flip, translate's padded copy and its two outputs), never the
# split's. At least MIN_CHUNK_BATCHES batches, so a large image's chunk is not one batch of many small kernels.
CHUNK_BYTES = 16 * 2**20
MIN_CHUNK_BATCHES = 4


def chunk_batches(values_per_image: int, batch_size: int) -> int:
    """Batches per augmented chunk."""
    return max(MIN_CHUNK_BATCHES, CHUNK_BYTES // (4 * values_per_image * batch_size))


def nchw_bytes(torch: object, images: np.ndarray) -> Tensor:
    """A data set's uint8 images (N, H, W) or (N, H, W, C) as a contiguous N, C, H, W uint8 tensor on the host."""
    x = torch.from_numpy(images.copy())  # type: ignore[attr-defined]  # a private copy: the loaded array is read-only
    return (x.unsqueeze(1) if x.dim() == 3 else x.permute(0, 3, 1, 2)).contiguous()


# -- the network ---------------------------------------------------------------
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


def init_whitening(conv: nn.Conv2d, images: Tensor) -> None:
    """Set a torch whitening convolution's filters from ``images`` (a tensor N, C, H, W)."""
    import torch

    filters = recipe.whitening_filters(images.float().cpu().numpy(), conv.weight.shape[-1])
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


# -- the step: optimizer, schedule, lookahead ----------------------------------
def optimizer(net: nn.Module, hyper: recipe.Hyper, batch_size: int) -> NesterovSGD:
    """SGD-Nesterov with airbench94's decoupled settings (:func:`decoupled_rates`); torch multiplies weight decay
    by the learning rate, so each group's decay is divided by its rate. Groups: BatchNorm biases (``bias_scaler`` x
    lr), the whitening bias (frozen after its epochs by a zero rate, see :func:`set_rates`), everything else."""
    from torch import nn

    lr, decay = recipe.decoupled_rates(hyper, batch_size)
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


def set_rates(opt: StepOptimizer, step: int, total: int, whiten_bias_live: bool) -> None:
    """Every group's learning rate for ``step``; the whitening bias (group 1) at zero once frozen (a zero rate
    rather than requires_grad=False: data-parallel ranks then keep the same gradients)."""
    factor = recipe.lr_factor(step, total)
    for i, g in enumerate(opt.param_groups):
        g["lr"] = g["base_lr"] * factor * (1.0 if i != 1 or whiten_bias_live else 0.0)


class Lookahead:
    """airbench94's lookahead over a torch network's floating-point state (weights and BatchNorm statistics)."""

    def __init__(self, net: nn.Module) -> None:
        self.state = {k: v for k, v in net.state_dict().items() if v.is_floating_point()}
        self.average = {k: v.detach().clone() for k, v in self.state.items()}

    def after_step(self, step: int, total: int) -> None:
        import torch

        for decay in recipe.lookahead_decays(step, total):
            with torch.no_grad():
                for k, live in self.state.items():
                    avg = self.average[k]
                    avg.lerp_(live, 1 - decay)
                    live.copy_(avg)


# -- augmentation ----------------------------------------------------------------
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


def tta_logits(net: nn.Module, x: Tensor, level: int) -> Tensor:
    """:func:`tta` of a torch network on NCHW tensors."""
    import torch.nn.functional as F

    def shifted(images: Tensor) -> tuple[Tensor, Tensor]:
        h, w = images.shape[-2:]
        padded = F.pad(images, (1,) * 4, mode="reflect")
        return padded[:, :, :h, :w], padded[:, :, 2:, 2:]

    return recipe.tta(net, x, level, lambda images: images.flip(-1), shifted)
