"""The shared TensorFlow/Keras recipe: tf.data with prefetch, mixed precision on GPU,
optional XLA, MirroredStrategy over the guest's GPUs.

TensorFlow fixes threads and GPU memory when its runtime starts, so
:meth:`KerasClassifier.prepare` sets them before anything touches a device.
The profile framebuffer becomes a logical-device ``memory_limit`` (which
excludes memory growth: the two cannot be combined).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from suites.errors import require
from suites.workloads.base import TRAIN_SMOKE, StepMeter, TrainConfig, Workload

PRECISIONS = ("auto", "float32", "mixed_float16", "mixed_bfloat16")


@dataclass
class KerasTrainConfig(TrainConfig):
    framework: str = "tensorflow"
    lr: float = 2e-3
    precision: str = "auto"  # auto: mixed_float16 on GPU, float32 on CPU
    xla: bool = False  # jit_compile the train step

    def check(self) -> None:
        super().check()
        require(self.precision in PRECISIONS, "workload.precision", f"must be one of {', '.join(PRECISIONS)}")


class _Meter:
    """Keras callback that feeds the guest's StepMeter and stops at the target accuracy."""

    def __new__(cls, workload: "KerasClassifier", meter: StepMeter) -> Any:
        import keras

        n, bs, total = len(workload.x_train), workload.cfg.batch_size, workload.total_steps()

        class Callback(keras.callbacks.Callback):
            def on_train_batch_end(self, batch: int, logs: Any = None) -> None:
                meter.step(min(bs, n - batch * bs))
                if meter.steps >= total:  # workload.max_steps: fit checks this after every batch
                    self.model.stop_training = True

            def on_epoch_end(self, epoch: int, logs: Any = None) -> None:
                target = workload.cfg.target_accuracy
                if target and workload.evaluate()["test_accuracy"] >= target:
                    meter.target_reached()
                    self.model.stop_training = True

        return Callback()


class KerasClassifier(Workload):
    """Base of the Keras image classifiers: subclasses name a dataset and build a model."""

    smoke = TRAIN_SMOKE
    requires = {"tensorflow": "tf, or tf-gpu on a GPU host"}

    def load_numpy(self) -> tuple[Any, Any, Any, Any]:
        """(x_train float32 NHWC normalised, y_train int, x_test, y_test) of the plugin's dataset."""
        assert self.dataset is not None
        root = self.ctx.data["root"]
        return (*self.dataset.load_normalised(root, True), *self.dataset.load_normalised(root, False))

    def build_model(self, keras: Any) -> Any:
        raise NotImplementedError

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
        self.train_ds = (tf.data.Dataset.from_tensor_slices((self.x_train, self.y_train))
                         .shuffle(len(self.x_train), seed=self.ctx.seed).batch(self.cfg.batch_size)
                         .prefetch(tf.data.AUTOTUNE))
        self.test_ds = tf.data.Dataset.from_tensor_slices((self.x_test, self.y_test)) \
            .batch(self.cfg.eval_batch_size).prefetch(tf.data.AUTOTUNE)
        self.build()

    def _cap_framebuffer(self, tf: Any, gpus: list[Any]) -> str:
        fb = self.ctx.framebuffer_MiB
        if not gpus:
            return "not applied (no GPU)"
        if fb is None:
            return "whole GPU"
        for gpu in gpus:  # must happen before the runtime initialises the devices
            tf.config.set_logical_device_configuration(gpu, [tf.config.LogicalDeviceConfiguration(memory_limit=fb)])
        return f"{fb} MiB"

    def build(self) -> None:
        import keras

        steps = self.total_steps()
        schedule = keras.optimizers.schedules.CosineDecay(0.0, decay_steps=steps, warmup_target=self.cfg.lr,
                                                          warmup_steps=max(1, steps // 4))
        with self.strategy.scope():
            self.model = self.build_model(keras)
            self.model.compile(optimizer=keras.optimizers.Adam(schedule),
                               loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                               metrics=["accuracy"], jit_compile=self.cfg.xla)

    def total_steps(self) -> int:
        return self.cfg.total_steps(len(self.x_train))

    def train(self, meter: StepMeter) -> None:
        # The dataset shuffles itself each epoch; BatchNormalization(momentum=0.9) matches PyTorch.
        self.model.fit(self.train_ds, epochs=self.cfg.epochs, verbose=0, shuffle=False,
                       callbacks=[_Meter(self, meter)])

    def evaluate(self) -> dict[str, float]:
        _, accuracy = self.model.evaluate(self.test_ds, verbose=0)
        return {"test_accuracy": float(accuracy)}
