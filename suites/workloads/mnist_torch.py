"""MNIST with a small CNN in PyTorch (airbench-style: the dataset lives on the device)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from suites.data import DataConfig, resolve_mnist
from suites.errors import DataError, require
from suites.workloads.base import StepMeter, Workload, WorkloadConfig, register


@dataclass
class MnistTorchConfig(WorkloadConfig):
    name: str = "mnist-torch"
    framework: str = "torch"
    epochs: int = 1
    batch_size: int = 128
    lr: float = 4e-3  # Adam, peak of the one-cycle schedule
    width: int = 32  # channels of the first conv layer; the second has twice as many
    train_limit: Optional[int] = None  # use only the first N training images (smoke runs)
    max_steps: Optional[int] = None  # stop after N optimizer steps
    eval_batch_size: int = 1000

    def check(self) -> None:
        super().check()
        require(self.epochs >= 1, "workload.epochs", f"must be >= 1, got {self.epochs}")
        require(self.batch_size >= 1, "workload.batch_size", f"must be >= 1, got {self.batch_size}")
        require(self.lr > 0, "workload.lr", f"must be > 0, got {self.lr}")
        require(self.width >= 1, "workload.width", f"must be >= 1, got {self.width}")
        require(self.train_limit is None or self.train_limit >= 1, "workload.train_limit", "must be >= 1")
        require(self.max_steps is None or self.max_steps >= 1, "workload.max_steps", "must be >= 1")


def build_model(width: int) -> Any:
    from torch import nn

    return nn.Sequential(
        nn.Conv2d(1, width, 3, padding=1), nn.BatchNorm2d(width), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(width, 2 * width, 3, padding=1), nn.BatchNorm2d(2 * width), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(2 * width * 7 * 7, 128), nn.ReLU(), nn.Linear(128, 10),
    )


def load_split(root: str, train: bool, download: bool, device: Any) -> tuple[Any, Any]:
    """Whole split as normalised tensors on ``device`` via torchvision's MNIST reader."""
    from torchvision.datasets import MNIST

    try:
        ds = MNIST(root, train=train, download=download)
    except RuntimeError as exc:
        raise DataError(f"MNIST under {root}: {exc}") from exc
    x = ds.data.to(device).unsqueeze(1).float().div_(255.0).sub_(0.1307).div_(0.3081)
    return x, ds.targets.to(device)


@register
class MnistTorch(Workload):
    name = "mnist-torch"
    config_cls = MnistTorchConfig

    @classmethod
    def resolve_data(cls, data: DataConfig, base_dir: Path, seed: int) -> dict[str, Any]:
        return resolve_mnist(data, base_dir, seed)

    def prepare(self) -> None:
        import torch

        cfg, ctx = self.cfg, self.ctx
        torch.manual_seed(ctx.seed)
        torch.set_num_threads(max(1, len(ctx.vcpus)))
        self.device = torch.device("cuda" if ctx.gpus and torch.cuda.is_available() else "cpu")
        ctx.info["device"] = torch.cuda.get_device_name(0) if self.device.type == "cuda" else "cpu"
        ctx.info["framebuffer_cap"] = self._cap_framebuffer(torch)
        self.x_train, self.y_train = load_split(ctx.data["root"], True, ctx.data.get("download", False), self.device)
        if cfg.train_limit:
            self.x_train, self.y_train = self.x_train[: cfg.train_limit], self.y_train[: cfg.train_limit]
        self.x_test, self.y_test = load_split(ctx.data["root"], False, False, self.device)
        self.model = build_model(cfg.width).to(self.device)
        self.opt = torch.optim.Adam(self.model.parameters(), lr=cfg.lr)
        ctx.info["train_images"] = len(self.x_train)

    def _cap_framebuffer(self, torch: Any) -> str:
        """Bound this process's CUDA allocations to the profile framebuffer."""
        fb = self.ctx.framebuffer_MiB
        if self.device.type != "cuda":
            return "not applied (no GPU)"
        if fb is None:
            return "whole GPU"
        total = torch.cuda.get_device_properties(0).total_memory
        torch.cuda.set_per_process_memory_fraction(min(1.0, fb * 2**20 / total), 0)
        return f"{fb} MiB"

    def total_steps(self) -> int:
        per_epoch = -(-len(self.x_train) // self.cfg.batch_size)
        steps = per_epoch * self.cfg.epochs
        return min(steps, self.cfg.max_steps) if self.cfg.max_steps else steps

    def train(self, meter: StepMeter) -> None:
        import torch
        import torch.nn.functional as F

        if self.device.type == "cuda":
            meter.sync = torch.cuda.synchronize
        self.model.train()
        n, bs, total = len(self.x_train), self.cfg.batch_size, self.total_steps()
        gen = torch.Generator(device="cpu").manual_seed(self.ctx.seed)
        # One-cycle: warm up then anneal, so one epoch ends at a stable ~99%.
        sched = torch.optim.lr_scheduler.OneCycleLR(self.opt, max_lr=self.cfg.lr, total_steps=total, pct_start=0.25)
        while meter.steps < total:
            order = torch.randperm(n, generator=gen).to(self.device)
            for i in range(0, n, bs):
                idx = order[i : i + bs]
                loss = F.cross_entropy(self.model(self.x_train[idx]), self.y_train[idx])
                self.opt.zero_grad(set_to_none=True)
                loss.backward()
                self.opt.step()
                sched.step()
                meter.step(len(idx))
                if meter.steps >= total:
                    break

    def evaluate(self) -> dict[str, float]:
        import torch

        self.model.eval()
        correct = 0
        with torch.no_grad():
            for i in range(0, len(self.x_test), self.cfg.eval_batch_size):
                logits = self.model(self.x_test[i : i + self.cfg.eval_batch_size])
                correct += (logits.argmax(1) == self.y_test[i : i + self.cfg.eval_batch_size]).sum().item()
        return {"test_accuracy": correct / len(self.x_test)}
