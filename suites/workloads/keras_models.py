"""MNIST and CIFAR-10 in TensorFlow/Keras: the same models as the PyTorch plugins."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from suites.data.cifar import CIFAR10
from suites.data.mnist import MNIST
from suites.workloads.base import CIFAR_SMOKE
from suites.workloads.keras_common import KerasClassifier, KerasTrainConfig


@dataclass
class MnistTfConfig(KerasTrainConfig):
    name: str = "mnist-tf"
    lr: float = 4e-3


class MnistTf(KerasClassifier):
    name = "mnist-tf"
    dataset = MNIST
    config_cls = MnistTfConfig

    def build_model(self, keras: Any) -> Any:
        L, w = keras.layers, self.cfg.width
        return keras.Sequential([
            keras.Input((28, 28, 1)),
            L.Conv2D(w, 3, padding="same"), L.BatchNormalization(momentum=0.9), L.ReLU(), L.MaxPooling2D(),
            L.Conv2D(2 * w, 3, padding="same"), L.BatchNormalization(momentum=0.9), L.ReLU(), L.MaxPooling2D(),
            L.Flatten(), L.Dense(128, activation="relu"), L.Dense(10, dtype="float32"),
        ])


@dataclass
class Cifar10TfConfig(KerasTrainConfig):
    name: str = "cifar10-tf"
    epochs: int = 10
    batch_size: int = 512
    lr: float = 2e-3
    width: int = 64
    eval_batch_size: int = 2000


class Cifar10Tf(KerasClassifier):
    name = "cifar10-tf"
    dataset = CIFAR10
    config_cls = Cifar10TfConfig
    smoke = CIFAR_SMOKE

    def build_model(self, keras: Any) -> Any:
        L, w = keras.layers, self.cfg.width

        def conv_bn(x: Any, c: int, pool: bool = False) -> Any:
            x = L.Conv2D(c, 3, padding="same", use_bias=False)(x)
            x = L.Activation("gelu")(L.BatchNormalization(momentum=0.9)(x))
            return L.MaxPooling2D()(x) if pool else x

        inputs = keras.Input((32, 32, 3))
        # Augmentation as layers: it runs on the device, and only while training.
        x = L.RandomTranslation(0.125, 0.125, fill_mode="reflect")(L.RandomFlip("horizontal")(inputs))
        x = conv_bn(conv_bn(x, w), 2 * w, pool=True)
        x = L.Add()([x, conv_bn(conv_bn(x, 2 * w), 2 * w)])
        x = conv_bn(conv_bn(x, 4 * w, pool=True), 8 * w, pool=True)
        x = L.Add()([x, conv_bn(conv_bn(x, 8 * w), 8 * w)])
        x = L.GlobalMaxPooling2D()(x)
        return keras.Model(inputs, L.Dense(10, use_bias=False, dtype="float32")(x))
