"""MNIST in PyTorch with the CIFAR-10 record's recipe (:mod:`suites.workloads.fast_recipe`) at width 16: one
epoch reaches 99.2 % on real MNIST (99.18 %, 23 s on 2 CPU cores; width 32: 99.15 % after one epoch, 99.56 % after
two). No flips: a mirrored digit is another glyph."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from suites.data.mnist import MNIST
from suites.workloads.base import RECORD_SMOKE
from suites.workloads.speed_record import RecordClassifier, RecordTrainConfig

TARGET = 0.99  # test accuracy on real MNIST, checked at the end of the epoch


@dataclass
class MnistTorchConfig(RecordTrainConfig):
    name: str = "mnist-torch"
    epochs: float = 1
    target_accuracy: Optional[float] = TARGET
    batch_size: int = 512
    width: int = 16  # conv groups of 16, 64, 64 channels
    flip: bool = False
    tta_level: int = 0  # no mirrored views: a mirrored digit is another glyph


class MnistTorch(RecordClassifier):
    name = "mnist-torch"
    dataset = MNIST
    config_cls = MnistTorchConfig
    smoke = RECORD_SMOKE
