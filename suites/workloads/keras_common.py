"""The shared TensorFlow/Keras recipe: airbench94's network and step (suites/workloads/keras_models.py says where
Keras differs from the torch workloads), tf.data with prefetch, mixed precision on GPU, optional XLA,
MirroredStrategy over the guest's GPUs; evaluations off the training clock.

TensorFlow fixes threads and GPU memory when its runtime starts, so
:meth:`KerasClassifier.prepare` sets them before anything touches a device.
The profile framebuffer becomes a logical-device ``memory_limit`` (which
excludes memory growth: the two cannot be combined).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

from suites.errors import BenchError, require
from suites.workloads import fast_recipe as recipe
from suites.workloads.airbench94 import RecipeConfig
from suites.workloads.base import RECORD_SMOKE, Classifier
from suites.workloads.keras_net import (
    Keras,
    KerasLookahead,
    TriangleSchedule,
    airbench94_net,
    start_as_identity,
    whitening_kernel,
)
from suites.workloads.timing import StepMeter

if TYPE_CHECKING:  # for the annotations only
    import numpy as np

PRECISIONS = ("auto", "float32", "mixed_float16", "mixed_bfloat16")


# The CUDA context and library handles TF holds outside its logical device (about 0.5 GB on current GPUs with
# lazy loading); TF pre-allocates its whole memory_limit on top of it, so a limit of the whole framebuffer went
# past a vGPU's (and MPS's pinned) limit at start. Kept out of the framebuffer, as torch's cap keeps its measured
# context out (torch_common.cap_framebuffer).
TF_CONTEXT_MiB = 640


def tf_memory_limit(framebuffer_MiB: int) -> int:
    """TF's logical-device memory_limit under a framebuffer: the framebuffer less the context allowance; one
    BenchError line where nothing would be left."""
    left = framebuffer_MiB - TF_CONTEXT_MiB
    if left <= 0:
        raise BenchError(f"{framebuffer_MiB} MiB framebuffer < the {TF_CONTEXT_MiB} MiB kept for TF's CUDA context: "
                         "nothing left for the guest's tensors (a profile with a larger framebuffer)")
    return left


@dataclass
class KerasTrainConfig(RecipeConfig):
    framework: str = "tensorflow"
    precision: str = "auto"  # auto: mixed_float16 on GPU, float32 on CPU
    xla: bool = False  # jit_compile the train step

    def check(self) -> None:
        super().check()
        require(self.precision in PRECISIONS, "workload.precision", f"must be one of {', '.join(PRECISIONS)}")


class _Meter:
    """Keras callback: feeds the guest's StepMeter, pulls the lookahead, checks the target after each epoch
    (eval_each_epoch) off the clock, and stops at the schedule's last step."""

    def __new__(cls, workload: "KerasClassifier", meter: StepMeter) -> Keras:
        import keras

        bs, total = workload.cfg.batch_size, workload.total_steps()

        class Callback(keras.callbacks.Callback):
            def on_train_batch_end(self, batch: int, logs: dict[str, float] | None = None) -> None:
                meter.step(bs)  # whole batches only
                workload.lookahead.after_step(meter.steps, total)
                workload.weights_changed()
                if meter.over(total):
                    self.model.stop_training = True

            def on_epoch_end(self, epoch: int, logs: dict[str, float] | None = None) -> None:
                workload.check_finite(float((logs or {}).get("loss", 0.0)), meter.steps)
                if workload.cfg.target_accuracy and workload.cfg.eval_each_epoch:
                    with meter.untimed():
                        if meter.checked(workload.evaluate()["test_accuracy"], float(epoch + 1)):
                            self.model.stop_training = True

        return Callback()


class KerasClassifier(Classifier):
    """Base of the Keras image classifiers: subclasses name a dataset and their defaults."""

    smoke = RECORD_SMOKE
    full_precision = "float32"
    requires = {"tensorflow": "tf, or tf-gpu on a GPU host"}

    def load_numpy(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(x_train float32 NHWC normalised, y_train int, x_test, y_test) of the plugin's dataset."""
        assert self.dataset is not None
        root = self.ctx.data["root"]
        return (*self.dataset.load_normalised(root, True), *self.dataset.load_normalised(root, False))

    def prepare(self) -> None:
        threads = max(1, len(self.ctx.vcpus))
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
        import tensorflow as tf

        tf.config.threading.set_intra_op_parallelism_threads(threads)
        tf.config.threading.set_inter_op_parallelism_threads(min(2, threads))
        gpus = tf.config.list_physical_devices("GPU")
        self.ctx.info["framebuffer_cap"] = self._cap_framebuffer(tf, gpus)
        self.ctx.info["device"] = f"{len(gpus)} GPU(s)" if gpus else "cpu"
        precision = self.cfg.precision if self.cfg.precision != "auto" else ("mixed_float16" if gpus else "float32")
        import keras

        keras.mixed_precision.set_global_policy(precision)
        keras.utils.set_random_seed(self.ctx.seed)
        self.ctx.info["precision"] = precision
        mirrored = len(gpus) > 1 and self.cfg.ranks != 1  # one replica per GPU unless told one
        self.strategy = tf.distribute.MirroredStrategy() if mirrored else tf.distribute.get_strategy()
        self.ctx.info["replicas"] = self.strategy.num_replicas_in_sync
        self.x_train, self.y_train, self.x_test, self.y_test = self.load_numpy()
        if self.cfg.train_limit:
            self.x_train, self.y_train = self.x_train[: self.cfg.train_limit], self.y_train[: self.cfg.train_limit]
        self.ctx.info["train_images"] = len(self.x_train)
        one_hot = tf.one_hot(self.y_train, 10)  # the label-smoothed loss takes one-hot targets
        self.train_ds = (tf.data.Dataset.from_tensor_slices((self.x_train, one_hot))
                         .shuffle(len(self.x_train), seed=self.ctx.seed)
                         .batch(min(self.cfg.batch_size, len(self.x_train)), drop_remainder=True)
                         .prefetch(tf.data.AUTOTUNE))
        self.build()

    def _cap_framebuffer(self, tf: Keras, gpus: list[Keras]) -> str:
        fb = self.ctx.framebuffer_MiB
        if not gpus:
            return "not applied (no GPU)"
        if fb is None:  # never the whole card up front (TF's default): it grows to what it uses
            for gpu in gpus:
                tf.config.experimental.set_memory_growth(gpu, True)
            return "whole GPU (TF memory growth: it holds what it uses, not the whole card)"
        limit = tf_memory_limit(fb)
        for gpu in gpus:  # must happen before the runtime initialises the devices
            tf.config.set_logical_device_configuration(gpu, [tf.config.LogicalDeviceConfiguration(memory_limit=limit)])
        return (f"{fb} MiB: TF device {limit} MiB + {TF_CONTEXT_MiB} MiB kept for the CUDA context (an allowance, "
                "not measured: TF fixes its devices before its runtime, and so its context, exists)")

    def build(self) -> None:
        """airbench94's network and step at the torch workloads' rates: SGD-Nesterov at the per-1024-images rate
        over the momentum's gain, its schedule, and the coupled weight decay as L2 terms (half the decay each,
        since d(l2 w^2)/dw = 2 l2 w)."""
        import keras

        c, total = self.cfg, self.total_steps()
        hyper = c.hyper()
        lr, decay = recipe.decoupled_rates(hyper, c.batch_size)
        with self.strategy.scope():
            self.model = airbench94_net(keras, self.x_train.shape[1:], c.width, c.flip, c.translate,
                                    (decay / lr / 2, decay / (lr * hyper.bias_scaler) / 2))
            self.model.get_layer("whiten").kernel.assign(whitening_kernel(self.x_train))
            start_as_identity(self.model)
            self.lookahead = KerasLookahead(self.model)
            self.model.compile(optimizer=keras.optimizers.SGD(TriangleSchedule(lr, total), momentum=hyper.momentum,
                                                              nesterov=True),
                               loss=keras.losses.CategoricalCrossentropy(from_logits=True, reduction="sum",
                                                                         label_smoothing=c.label_smoothing),
                               jit_compile=c.xla)
        self.weights_changed()

    def total_steps(self) -> int:
        return self.sized_steps or self.cfg.total_steps(len(self.x_train), drop_last=True)

    def train(self, meter: StepMeter) -> None:
        meter.target = self.cfg.target_accuracy
        per_epoch = max(1, len(self.x_train) // self.cfg.batch_size)
        self.model.fit(self.train_ds, epochs=math.ceil(self.total_steps() / per_epoch), verbose=0, shuffle=False,
                       callbacks=[_Meter(self, meter)])
        if self.cfg.target_accuracy and not meter.target_met:  # unchecked, or missed at the last epoch
            with meter.untimed():  # the end of the schedule: where airbench94 checks
                meter.checked(self.evaluate()["test_accuracy"], min(meter.steps / per_epoch, float(self.cfg.epochs)))
        self.ctx.info["eval_untimed_s"] = round(meter.untimed_s, 3)

    def test_accuracy(self) -> float:
        """Test accuracy with the recipe's test-time augmentation."""
        import numpy as np

        bs, correct = self.cfg.eval_batch_size, 0
        for i in range(0, len(self.x_test), bs):
            logits = self.tta_logits(self.x_test[i : i + bs])
            correct += int((np.argmax(logits, 1) == self.y_test[i : i + bs]).sum())
        return correct / len(self.x_test)

    def tta_logits(self, x: Keras) -> Keras:
        """:func:`suites.workloads.fast_recipe.tta` on NHWC numpy images."""
        import numpy as np

        def shifted(images: Keras) -> tuple[Keras, Keras]:
            h, w = images.shape[1:3]
            padded = np.pad(images, ((0, 0), (1, 1), (1, 1), (0, 0)), mode="reflect")
            return padded[:, :h, :w].copy(), padded[:, 2:, 2:].copy()

        return recipe.tta(lambda images: np.asarray(self.model(images, training=False)), x, self.cfg.tta_level,
                          lambda images: images[:, :, ::-1].copy(), shifted)
