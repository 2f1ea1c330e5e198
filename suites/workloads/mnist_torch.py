"""MNIST with a small CNN in PyTorch (the shared recipe: data on the device, one-cycle Adam)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from suites.data.mnist import MNIST
from suites.workloads.torch_common import TorchClassifier, TorchTrainConfig, one_cycle


@dataclass
class MnistTorchConfig(TorchTrainConfig):
    name: str = "mnist-torch"
    lr: float = 4e-3  # Adam, peak of the one-cycle schedule
    width: int = 32  # channels of the first conv layer; the second has twice as many


def load_split(root: str, train: bool, device: Any) -> tuple[Any, Any]:
    """Whole split as normalised tensors on ``device``, read by the suite's own IDX reader (the runner found or
    fetched and checked the files: a guest never downloads). torchvision's reader did the same and cost every
    guest 1.4 s of CPU to import torchvision."""
    import torch

    images, labels = MNIST.load_uint8(root, train)
    x = torch.from_numpy(images.copy()).to(device).unsqueeze(1).float().div_(255.0)
    return x.sub_(MNIST.mean[0]).div_(MNIST.std[0]), torch.from_numpy(labels.astype("int64")).to(device)


class MnistTorch(TorchClassifier):
    name = "mnist-torch"
    dataset = MNIST
    config_cls = MnistTorchConfig

    def load_data(self) -> tuple[Any, Any, Any, Any]:
        root = self.ctx.data["root"]
        return (*load_split(root, True, self.device), *load_split(root, False, self.device))

    def build_model(self) -> Any:
        from torch import nn

        w = self.cfg.width
        return nn.Sequential(
            nn.Conv2d(1, w, 3, padding=1), nn.BatchNorm2d(w), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(w, 2 * w, 3, padding=1), nn.BatchNorm2d(2 * w), nn.ReLU(), nn.MaxPool2d(2),
            nn.Flatten(), nn.Linear(2 * w * 7 * 7, 128), nn.ReLU(), nn.Linear(128, 10),
        )

    def make_optimizer(self, model: Any, total_steps: int) -> tuple[Any, Any]:
        import torch

        opt = torch.optim.Adam(model.parameters(), lr=self.cfg.lr)
        # One-cycle: warm up then anneal, so one epoch ends at a stable ~99%.
        return opt, one_cycle(torch, opt, self.cfg.lr, total_steps)
