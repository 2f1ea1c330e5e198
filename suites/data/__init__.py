"""Datasets: where they are, whether they are intact, and synthetic stand-ins.

The runner resolves data *before* any guest starts, so a missing or damaged
dataset is one clear line, not a crash inside a worker. Synthetic data is
always written in the dataset's real on-disk format and read back through the
same loader as the real files.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from suites.errors import require


@dataclass
class DataConfig:
    root: str = "data"  # holds MNIST/raw/ and cifar-10-batches-py/; relative to the launch directory
    download: bool = False  # let torchvision fetch missing files (needs network)
    synthetic: bool = True  # generate look-alike files when the real ones are absent
    synthetic_train: int = 6000
    synthetic_test: int = 1000
    cache_dir: str = "outputs/data"  # where synthetic files are written

    def check(self) -> None:
        require(self.synthetic_train >= 10, "data.synthetic_train", f"must be >= 10, got {self.synthetic_train}")
        require(self.synthetic_test >= 10, "data.synthetic_test", f"must be >= 10, got {self.synthetic_test}")


def resolve(dataset: str, cfg: DataConfig, base_dir: Path, seed: int = 0) -> dict[str, Any]:
    """The guest's data spec for a dataset by name (real files, or synthetic ones)."""
    from suites.data import cifar, mnist

    resolvers = {"mnist": mnist.resolve_mnist, "cifar10": cifar.resolve}
    return resolvers[dataset](cfg, base_dir, seed)


# Per-channel mean and std of the training images, for normalising to ~N(0, 1).
NORMALISATION = {"mnist": ((0.1307,), (0.3081,)),
                 "cifar10": ((0.4914, 0.4822, 0.4465), (0.2470, 0.2435, 0.2616))}


def load_normalised(dataset: str, root: str, train: bool) -> tuple[Any, Any]:
    """(float32 N x H x W x C normalised images, int64 labels) for frameworks that take numpy."""
    import numpy as np

    from suites.data import cifar, mnist

    if dataset == "mnist":
        x, y = mnist.load_numpy(root, train)
        x = x[..., None]
    else:
        x, y = cifar.load_split(root, train)
    mean, std = (np.array(v, dtype="float32") for v in NORMALISATION[dataset])
    return (x.astype("float32") / 255.0 - mean) / std, y.astype("int64")
