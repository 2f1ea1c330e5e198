"""airbench94's recipe (:mod:`suites.workloads.fast_recipe`) as a guest workload, for any image dataset: the
data on the device, whole batches of a fresh order each epoch, the decoupled SGD step, its schedule and lookahead,
test-time augmentation at evaluation. ``cifar10-torch`` and ``mnist-torch`` are this class with their dataset and
defaults.

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
from suites.workloads.sgd import StepOptimizer
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
        return recipe.dtype_of(self.precision())

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
        net = recipe.airbench94_net(self.x_train.shape[1], self.cfg.width).to(self.device)
        recipe.init_whitening(net[0], self.inputs(self.x_train[: recipe.WHITEN_IMAGES]))
        return recipe.cast_weights(net, self.weights_dtype())

    def make_optimizer(self, model: nn.Module, total_steps: int) -> tuple[StepOptimizer, LRScheduler | None]:
        self.lookahead = recipe.Lookahead(self.net)  # after the whitening filters are set: they are averaged too
        return recipe.optimizer(self.net, self.cfg.hyper(), self.cfg.batch_size), None

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
                images = recipe.translate(images, c.translate, gen)
            if c.channels_last:
                images = images.contiguous(memory_format=torch.channels_last)
            labels = self.y_train[idx]
            for j in range(max(1, len(idx) // bs)):
                yield images[j * bs: (j + 1) * bs], labels[j * bs: (j + 1) * bs]

    def train_step(self, x: Tensor, y: Tensor, step: int, total: int) -> Tensor:
        import torch.nn.functional as F

        recipe.set_rates(self.opt, step, total, whiten_bias_live=self.epoch < self.cfg.whiten_bias_epochs)
        out = self.model(x)
        loss = F.cross_entropy(out.float(), y, label_smoothing=self.cfg.label_smoothing, reduction="sum")
        self.opt.zero_grad(set_to_none=True)
        loss.backward()
        self.opt.step()
        self.lookahead.after_step(step + 1, total)
        return loss

    def logits(self, x: Tensor) -> Tensor:
        return recipe.tta_logits(self.net, x, self.cfg.tta_level)


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
