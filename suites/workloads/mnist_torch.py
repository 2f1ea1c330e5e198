"""MNIST in PyTorch with the CIFAR-10 record's recipe (:mod:`suites.workloads.airbench94`) at width 16: one
epoch reaches 99.2 % on real MNIST (99.18 %, 23 s on 2 CPU cores; width 32: 99.15 % after one epoch, 99.56 % after
two). No flips: a mirrored digit is another glyph."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from suites.data.mnist import MNIST
from suites.workloads.airbench94 import Airbench94Classifier, Airbench94TrainConfig
from suites.workloads.base import RECORD_SMOKE

TARGET = 0.99  # test accuracy on real MNIST, checked at the end of the epoch


@dataclass
class MnistTorchConfig(Airbench94TrainConfig):
    name: str = "mnist-torch"
    epochs: float = 1
    target_accuracy: Optional[float] = TARGET
    batch_size: int = 512
    width: int = 16  # conv groups of 16, 64, 64 channels
    flip: bool = False
    tta_level: int = 0  # no mirrored views: a mirrored digit is another glyph


class MnistTorch(Airbench94Classifier):
    name = "mnist-torch"
    # fp32 weights on a GPU too, not airbench94's fp16 (or bf16). MNIST's blank background leaves whitened channels
    # with almost no variance, which the BatchNorms (eps 1e-12) scale up: the first convolution's gradients of the
    # summed loss reach ~4e6 at the first step, past fp16's 65,504 (inf, then nan after one epoch on an H200);
    # bf16 has the range but not the bits to keep the updates (35.5 % after one epoch on an H200, 75.3 % on the
    # CPU). fp32 reached 99.18 % (2 CPU cores); cuDNN's convolutions may still use TF32 (torch's default).
    gpu_precision = "fp32"
    dataset = MNIST
    config_cls = MnistTorchConfig
    smoke = RECORD_SMOKE
