"""CIFAR-10 with a ResNet-9-class network in PyTorch (airbench / Myrtle style)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from suites.data.cifar import CIFAR10
from suites.workloads.base import CIFAR_SMOKE
from suites.workloads.torch_common import TorchClassifier, TorchTrainConfig, one_cycle


@dataclass
class Cifar10TorchConfig(TorchTrainConfig):
    name: str = "cifar10-torch"
    epochs: int = 10
    batch_size: int = 512
    lr: float = 0.2  # SGD-Nesterov peak of the one-cycle schedule
    width: int = 64  # 64 -> 128 -> 256 -> 512 channels: ResNet-9
    momentum: float = 0.9
    weight_decay: float = 5e-4
    label_smoothing: float = 0.2
    eval_batch_size: int = 2000


def conv_bn(c_in: int, c_out: int, pool: bool = False) -> Any:
    from torch import nn

    layers = [nn.Conv2d(c_in, c_out, 3, padding=1, bias=False), nn.BatchNorm2d(c_out), nn.GELU()]
    return nn.Sequential(*layers, *([nn.MaxPool2d(2)] if pool else []))


def residual(c: int) -> Any:
    from torch import nn

    class Residual(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.body = nn.Sequential(conv_bn(c, c), conv_bn(c, c))

        def forward(self, x: Any) -> Any:
            return x + self.body(x)

    return Residual()


class Cifar10Torch(TorchClassifier):
    name = "cifar10-torch"
    dataset = CIFAR10
    config_cls = Cifar10TorchConfig
    smoke = CIFAR_SMOKE

    def load_data(self) -> tuple[Any, Any, Any, Any]:
        import torch

        mean = torch.tensor(CIFAR10.mean, device=self.device).view(1, 3, 1, 1)
        std = torch.tensor(CIFAR10.std, device=self.device).view(1, 3, 1, 1)
        out = []
        for train in (True, False):
            images, labels = CIFAR10.load_uint8(self.ctx.data["root"], train)
            x = torch.from_numpy(images).to(self.device).permute(0, 3, 1, 2).float().div_(255.0)
            out += [(x - mean) / std, torch.from_numpy(labels).to(self.device)]
        return tuple(out)  # type: ignore[return-value]

    def build_model(self) -> Any:
        from torch import nn

        w = self.cfg.width
        return nn.Sequential(
            conv_bn(3, w), conv_bn(w, 2 * w, pool=True), residual(2 * w),
            conv_bn(2 * w, 4 * w, pool=True), conv_bn(4 * w, 8 * w, pool=True), residual(8 * w),
            nn.AdaptiveMaxPool2d(1), nn.Flatten(), nn.Linear(8 * w, 10, bias=False),
        )

    def make_optimizer(self, model: Any, total_steps: int) -> tuple[Any, Any]:
        import torch

        c = self.cfg
        opt = torch.optim.SGD(model.parameters(), lr=c.lr, momentum=c.momentum, nesterov=True,
                              weight_decay=c.weight_decay)
        return opt, one_cycle(torch, opt, c.lr, total_steps, anneal_strategy="linear")

    def augment(self, x: Any, gen: Any) -> Any:
        """Random 4-pixel-padded crops and horizontal flips, per image, on the device."""
        import torch
        import torch.nn.functional as F

        b, _, h, w = x.shape
        padded = F.pad(x, (4, 4, 4, 4), mode="reflect")
        dy = torch.randint(0, 9, (b,), generator=gen, device=x.device)
        dx = torch.randint(0, 9, (b,), generator=gen, device=x.device)
        rows = (dy[:, None] + torch.arange(h, device=x.device))[:, None, :, None]
        cols = (dx[:, None] + torch.arange(w, device=x.device))[:, None, None, :]
        crops = padded[torch.arange(b, device=x.device)[:, None, None, None],
                       torch.arange(x.shape[1], device=x.device)[None, :, None, None], rows, cols]
        flip = torch.rand(b, generator=gen, device=x.device) < 0.5
        return torch.where(flip[:, None, None, None], crops.flip(3), crops)
