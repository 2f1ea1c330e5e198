"""Where datasets are looked for, and how synthetic stand-ins are made (the ``data.*`` settings)."""

from __future__ import annotations

from dataclasses import dataclass

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
