"""airbench94's network and step pieces in Keras (:mod:`suites.workloads.airbench94` is the torch original;
suites/workloads/keras_models.py says where Keras differs): the network with its augmentation layers, the
whitening bias, the identity start, the whitening kernel, lookahead and the warm-up/decay schedule. Keras is
imported inside each function: the runner imports this module without TensorFlow.
"""

from __future__ import annotations

from typing import Any, TypeAlias

from gpu_probe.shapes import JsonObject
from suites.workloads import fast_recipe as recipe

# keras (TensorFlow's) and what it makes (a model, a layer, a tensor, a schedule): imported inside each function,
# so untyped here
Keras: TypeAlias = Any


def airbench94_net(keras: Keras, shape: tuple[int, int, int], width: int, flip: bool, translate: int,
               decay: tuple[float, float]) -> Keras:
    """airbench94's network in Keras for images of ``shape`` (H, W, C), augmentation layers in front (they act
    only in training); ``decay``: the L2 factors of weights and of BatchNorm biases."""
    L = keras.layers
    l2, l2_bias = (keras.regularizers.L2(d) for d in decay)

    def group(x: Keras, c: int) -> Keras:
        for pool in (True, False):
            x = L.Conv2D(c, 3, padding="same", use_bias=False, kernel_regularizer=l2)(x)
            x = L.MaxPooling2D()(x) if pool else x
            x = L.BatchNormalization(momentum=0.6, epsilon=1e-12, scale=False, beta_regularizer=l2_bias)(x)
            x = L.Activation("gelu")(x)
        return x

    inputs = keras.Input(shape)
    x = L.RandomFlip("horizontal")(inputs) if flip else inputs
    if translate:
        x = L.RandomTranslation(translate / shape[0], translate / shape[1], fill_mode="reflect")(x)
    x = L.Conv2D(2 * shape[2] * 4, 2, padding="valid", use_bias=False, trainable=False, name="whiten")(x)
    x = L.Activation("gelu")(WhitenBias(name="whiten_bias")(x))
    for c in (width, 4 * width, 4 * width):
        x = group(x, c)
    x = L.Flatten()(L.MaxPooling2D(3)(x))
    x = L.Dense(10, use_bias=False, kernel_regularizer=l2)(x)
    return keras.Model(inputs, L.Rescaling(1 / 9, dtype="float32")(x))


def WhitenBias(name: str) -> Keras:  # noqa: N802 - a layer, named as one
    """A trainable per-channel bias after the frozen whitening convolution (Keras freezes whole layers)."""
    import keras

    class Bias(keras.layers.Layer):
        def build(self, shape: Keras) -> None:
            self.bias = self.add_weight(shape=(shape[-1],), initializer="zeros", name="bias")

        def call(self, x: Keras) -> Keras:
            return x + keras.ops.cast(self.bias, x.dtype)

    return Bias(name=name)


def start_as_identity(model: Keras) -> None:
    """Each 3x3 convolution's first filters pass their input channel through (torch's dirac init)."""
    import numpy as np

    for layer in model.layers:
        if type(layer).__name__ == "Conv2D" and layer.name != "whiten":
            kernel = layer.kernel.numpy()
            n = min(kernel.shape[2], kernel.shape[3])
            kernel[:, :, :, :n] = 0.0
            kernel[1, 1, np.arange(n), np.arange(n)] = 1.0
            layer.kernel.assign(kernel)


def whitening_kernel(images: Keras) -> Keras:
    """The whitening filters of :func:`suites.workloads.fast_recipe.whitening_filters` from NHWC numpy images, as
    a Keras kernel (kh, kw, in, out)."""
    filters = recipe.whitening_filters(images[: recipe.WHITEN_IMAGES].transpose(0, 3, 1, 2))
    return filters.transpose(2, 3, 1, 0)


class KerasLookahead:
    """:class:`suites.workloads.airbench94.Lookahead` over a Keras model's floating-point weights."""

    def __init__(self, model: Keras) -> None:
        import keras

        self.live = [w for w in model.weights if "float" in str(w.dtype)]
        self.average = [keras.Variable(w.numpy(), trainable=False) for w in self.live]

    def after_step(self, step: int, total: int) -> None:
        for decay in recipe.lookahead_decays(step, total):
            for live, avg in zip(self.live, self.average, strict=True):
                avg.assign(avg + (1 - decay) * (live - avg))
                live.assign(avg)


def TriangleSchedule(peak: float, total: int) -> Keras:  # noqa: N802 - a schedule class, built where keras is loaded
    """:func:`suites.workloads.fast_recipe.lr_factor` x ``peak`` as a Keras schedule (evaluated in the graph)."""
    import keras

    class Triangle(keras.optimizers.schedules.LearningRateSchedule):
        def __call__(self, step: Keras) -> Keras:
            ops = keras.ops
            s = ops.cast(step, "float32")
            top = float(int(recipe.LR_PEAK_AT * total))
            up = recipe.LR_START + (1 - recipe.LR_START) * s / max(1.0, top)
            down = 1 + (recipe.LR_END - 1) * (s - top) / max(1.0, total - top)
            return peak * ops.where(s < top, up, down)

        def get_config(self) -> JsonObject:
            return {"peak": peak, "total": total}

    return Triangle()
