"""Tests of ``suites/workloads/keras_common.py``."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from suites.workloads import keras_common


class FakeTfConfig:
    def __init__(self) -> None:
        self.limits: dict[str, int] = {}

    def set_logical_device_configuration(self, gpu: str, configs: list) -> None:
        self.limits[gpu] = configs[0].memory_limit

    @staticmethod
    def LogicalDeviceConfiguration(memory_limit: int) -> SimpleNamespace:  # noqa: N802 (TF's name)
        return SimpleNamespace(memory_limit=memory_limit)


def test_tf_logical_device_gets_the_framebuffer_less_the_context():
    tf = SimpleNamespace(config=FakeTfConfig())
    guest = object.__new__(keras_common.KerasClassifier)
    guest.ctx = SimpleNamespace(framebuffer_MiB=4096)
    note = guest._cap_framebuffer(tf, ["GPU:0"])
    assert tf.config.limits == {"GPU:0": 4096 - keras_common.TF_CONTEXT_MiB}
    assert note.startswith(f"4096 MiB: TF device {4096 - keras_common.TF_CONTEXT_MiB} MiB + ")
    with pytest.raises(Exception, match="512 MiB framebuffer < the 640 MiB kept for TF's CUDA context"):
        keras_common.tf_memory_limit(512)
