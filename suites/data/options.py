"""Where datasets are looked for, and how synthetic stand-ins are made (the ``data.*`` settings)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

import psutil

from suites.errors import require

DOWNLOAD_MODES = ("auto", "true", "false")
LARGEST_IMAGE_BYTES = 32 * 32 * 3  # a CIFAR-10 image (MNIST's are 28 x 28 x 1): synthetic sets are made in memory
LARGEST_SYNTHETIC_TRAIN = 24000  # the largest of the datasets' own synthetic sizes (MNIST's)


@dataclass
class DataConfig:
    # holds MNIST/raw/ and cifar-10-batches-py/; relative to the launch directory
    root: str = field(default="data", metadata={"path": True})
    # auto: fetch a dataset missing under root into cache_dir when the network allows (checksums verified), else
    # synthetic with a note; true: fetch or stop with an error; false: never touch the network
    download: str = "auto"
    download_timeout_s: float = 300.0  # one dataset's whole fetch
    mnist_url: str = "https://ossci-datasets.s3.amazonaws.com/mnist/"  # torchvision's mirror: the four .gz files
    cifar10_url: str = "https://www.cs.toronto.edu/~kriz/"  # the publisher's: cifar-10-python.tar.gz
    synthetic: bool = True  # generate look-alike files when the real ones are absent
    # training images of a synthetic stand-in; None: the dataset's own size (MNIST 24000: the mnist-torch recipe's
    # one epoch reaches its 99 % target on it, and its rate a timed window of 36 steps; CIFAR-10 6000)
    synthetic_train: Optional[int] = None
    synthetic_test: int = 1000
    # synthetic files, and downloads under downloaded/
    cache_dir: str = field(default="outputs/data", metadata={"path": True})

    def train_images(self, dataset_default: int) -> int:
        """How many training images a synthetic stand-in gets: the setting, else the dataset's own size."""
        return self.synthetic_train if self.synthetic_train is not None else dataset_default

    @property
    def download_mode(self) -> str:
        """auto | true | false (a YAML or command-line boolean reads as its word)."""
        return str(self.download).lower()

    def check(self) -> None:
        require(self.download_mode in DOWNLOAD_MODES, "data.download",
                f"must be one of {', '.join(DOWNLOAD_MODES)}, got {self.download}")
        require(self.download_timeout_s > 0, "data.download_timeout_s", f"must be > 0, got {self.download_timeout_s}")
        require(self.synthetic_train is None or self.synthetic_train >= 10, "data.synthetic_train",
                f"must be >= 10, got {self.synthetic_train}")
        require(self.synthetic_test >= 10, "data.synthetic_test", f"must be >= 10, got {self.synthetic_test}")
        images = self.train_images(LARGEST_SYNTHETIC_TRAIN) + self.synthetic_test
        total = psutil.virtual_memory().total
        require(images * LARGEST_IMAGE_BYTES <= total // 4, "data.synthetic_train + data.synthetic_test",
                f"{images} synthetic images take up to {images * LARGEST_IMAGE_BYTES / 2**30:.1f} GiB; this host has "
                f"{total / 2**30:.1f} GiB of memory (at most a quarter of it: {total // 4 // LARGEST_IMAGE_BYTES})")
