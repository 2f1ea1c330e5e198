"""airbench94's recipe (:mod:`suites.workloads.fast_recipe`) as a guest workload, for any image dataset: the
data on the device in the run's precision, whole batches of a fresh order each epoch, the decoupled SGD step,
its schedule and lookahead, test-time augmentation at evaluation. ``cifar10-torch`` and ``mnist-torch`` are this
class with their dataset and defaults."""

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
        import torch

        assert self.dataset is not None
        mean = torch.tensor(self.dataset.mean, device=self.device).view(1, -1, 1, 1)
        std = torch.tensor(self.dataset.std, device=self.device).view(1, -1, 1, 1)
        out = []
        for train in (True, False):
            images, labels = self.dataset.load_uint8(self.ctx.data["root"], train)
            x = torch.from_numpy(images.copy()).to(self.device)
            x = (x.unsqueeze(1) if x.dim() == 3 else x.permute(0, 3, 1, 2)).float().div_(255.0)
            out += [((x - mean) / std).to(self.weights_dtype()),
                    torch.from_numpy(labels.astype("int64")).to(self.device)]
        self.ctx.info["precision_detail"] = f"{self.precision()} weights and data, BatchNorm fp32"
        return tuple(out)  # type: ignore[return-value]

    def build_model(self) -> nn.Module:
        net = recipe.airbench94_net(self.x_train.shape[1], self.cfg.width).to(self.device)
        recipe.init_whitening(net[0], self.x_train[: recipe.WHITEN_IMAGES])
        return recipe.cast_weights(net, self.weights_dtype())

    def make_optimizer(self, model: nn.Module, total_steps: int) -> tuple[StepOptimizer, LRScheduler | None]:
        self.lookahead = recipe.Lookahead(self.net)  # after the whitening filters are set: they are averaged too
        return recipe.optimizer(self.net, self.cfg.hyper(), self.cfg.batch_size), None

    def batches(self, epoch: int, gen: torch.Generator) -> Iterator[tuple[Tensor, Tensor]]:
        """Whole batches of a fresh order; the set flipped once at random, mirrored whole every other epoch, and
        translated anew each epoch."""
        import torch

        c = self.cfg
        self.epoch = epoch
        if epoch == 0:
            self.base = recipe.random_flip(self.x_train, gen) if c.flip else self.x_train
        images = recipe.translate(self.base, c.translate, gen) if c.translate else self.base
        if c.flip and epoch % 2 == 1:
            images = images.flip(-1)
        if c.channels_last:
            images = images.contiguous(memory_format=torch.channels_last)
        n, bs = len(images), c.batch_size
        order = torch.randperm(n, generator=gen, device=self.device)
        for i in range(max(1, n // bs)):
            idx = order[i * bs : (i + 1) * bs]
            yield images[idx], self.y_train[idx]

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
