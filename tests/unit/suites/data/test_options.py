"""Tests of ``suites/data/options.py``."""

from __future__ import annotations

from pathlib import Path
from suites.config.paths import absolute_paths
from suites.data.mnist import check_idx, resolve_mnist, synthesize_mnist, write_idx
from suites.data.options import DataConfig
import pytest
from suites.data.options import DataConfig
from suites.workloads.fixed_step import FixedStep, FixedStepConfig


def test_resolve_falls_back_to_synthetic_and_says_so(tmp_path: Path):
    given = DataConfig(root="absent", cache_dir="cache", synthetic_train=40, synthetic_test=20)
    spec = resolve_mnist(absolute_paths(given, tmp_path))
    assert spec["source"] == "synthetic" and "cache" in spec["root"]
    assert (Path(spec["root"]) / "MNIST/raw/t10k-images-idx3-ubyte").exists()


@pytest.mark.parametrize("bad", ["maybe", "2"])
def test_download_mode_is_checked(bad: str):
    with pytest.raises(Exception, match="data.download"):
        DataConfig(download=bad).check()


def test_a_synthetic_stand_in_is_the_real_sets_size_where_the_guests_have_gpus():
    from suites.data.options import DataConfig
    from suites.run.plan import data_for_device
    from suites.workloads.cifar10_torch import Cifar10Torch
    from suites.workloads.mnist_torch import MnistTorch

    gpu, cpu = True, False
    assert data_for_device(DataConfig(), Cifar10Torch, gpu).train_images(6000) == 50_000
    assert data_for_device(DataConfig(), MnistTorch, gpu).train_images(24000) == 60_000
    assert data_for_device(DataConfig(), Cifar10Torch, cpu).train_images(6000) == 6000
    given = DataConfig(synthetic_train=2048)
    assert data_for_device(given, Cifar10Torch, gpu) is given
    assert data_for_device(DataConfig(), FixedStep, gpu).synthetic_train is None  # no data set
