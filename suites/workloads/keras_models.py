"""MNIST and CIFAR-10 in TensorFlow/Keras with airbench94's recipe, as the PyTorch plugins run it (see
:mod:`suites.workloads.airbench94`): the same network, whitening, BatchNorm, loss, SGD-Nesterov with the same
decoupled rates, schedule, lookahead and test-time augmentation. Where Keras cannot follow, said here and in
docs/profiles-and-scenarios.md:

- one learning rate for every weight: BatchNorm biases do not learn 64x faster;
- the whitening bias trains throughout (Keras fixes what is trainable when the model is compiled);
- flips and translations are drawn per image every epoch (RandomFlip / RandomTranslation layers), not the
  alternating whole-set flip;
- on a GPU, mixed precision keeps fp32 weights (fp16 activations), where torch keeps fp16 weights.
Weight decay goes through the momentum as in torch: an L2 term of half the coupled decay on each weight.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from suites.data.cifar import CIFAR10
from suites.data.mnist import MNIST
from suites.workloads.base import RECORD_SMOKE
from suites.workloads.cifar10_torch import TARGET
from suites.workloads.keras_common import KerasClassifier, KerasTrainConfig
from suites.workloads.mnist_torch import TARGET as MNIST_TARGET


@dataclass
class MnistTfConfig(KerasTrainConfig):
    name: str = "mnist-tf"
    target_accuracy: Optional[float] = MNIST_TARGET
    batch_size: int = 512
    width: int = 16
    flip: bool = False
    tta_level: int = 0


class MnistTf(KerasClassifier):
    name = "mnist-tf"
    dataset = MNIST
    config_cls = MnistTfConfig
    smoke = RECORD_SMOKE


@dataclass
class Cifar10TfConfig(KerasTrainConfig):
    name: str = "cifar10-tf"
    epochs: float = 9.9
    batch_size: int = 1024
    width: int = 64
    target_accuracy: Optional[float] = TARGET


class Cifar10Tf(KerasClassifier):
    name = "cifar10-tf"
    dataset = CIFAR10
    config_cls = Cifar10TfConfig
    smoke = RECORD_SMOKE
