"""A dataset as a workload plugin names it: how the runner finds it, how a guest loads it."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from gpu_probe.shapes import JsonObject
from suites.data.options import DataConfig
from suites.errors import DataError

if TYPE_CHECKING:  # for the annotations only
    import numpy as np

# A data spec's source besides "real" and "synthetic": valid files of the dataset's shape that are not the published
# ones (their MD5s differ), whose accuracy is not the dataset's: said wherever the accuracy is shown.
LOOK_ALIKE = "look-alike"
FILE_TYPES = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
              (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def write_whole(path: Path, payload: bytes) -> None:
    """``path`` holds all of ``payload`` or is as it was: written beside it under a hidden name, then renamed over it;
    a full disk or an interrupt removes the half-written file (a cache must not keep one, even hidden)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_bytes(payload)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def require_regular_file(path: Path, what: str) -> None:
    """A data file must be a plain file: reading a FIFO blocks forever, a device never ends, a directory fails
    deep inside a loader. One DataError line instead, before anything reads it."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        raise DataError(f"{what} {path} does not exist") from None
    if not stat.S_ISREG(mode):
        file_type = next((name for test, name in FILE_TYPES if test(mode)), "not a regular file")
        raise DataError(f"{what} {path} is {file_type}, not a regular file")


def roll_each(images: np.ndarray, shifts: np.ndarray) -> np.ndarray:
    """Each image (N x H x W [x C]) rolled by its own (dy, dx), as ``np.roll(images[i], shifts[i], axis=(0, 1))``
    would, in one gather: a loop of np.roll took 40 s for CIFAR-10's 50,000 training images."""
    import numpy as np

    n, h, w = images.shape[:3]
    rows = (np.arange(h)[None, :] - shifts[:, :1]) % h
    cols = (np.arange(w)[None, :] - shifts[:, 1:]) % w
    return images[np.arange(n)[:, None, None], rows[:, :, None], cols[:, None, :]]


@dataclass(frozen=True)
class Dataset:
    name: str
    # Runner-side, before any guest starts: locate (or synthesise) the files; returns the guest's data spec.
    resolve: Callable[[DataConfig, int], JsonObject]  # (its absolute paths, seed)
    # Guest-side: (uint8 images N x H x W [x C], integer labels N) of one split under a resolved root.
    load_uint8: Callable[[str, bool], tuple[np.ndarray, np.ndarray]]
    mean: tuple[float, ...]  # per channel, of the training images in [0, 1], for normalising to ~N(0, 1)
    std: tuple[float, ...]
    real_train: int = 0  # the published training split's images: a synthetic stand-in's size where guests have GPUs

    def load_normalised(self, root: str, train: bool) -> tuple[np.ndarray, np.ndarray]:
        """(float32 N x H x W x C normalised images, int64 labels) for frameworks that take numpy."""
        import numpy as np

        x, y = self.load_uint8(root, train)
        if x.ndim == 3:  # greyscale: one channel
            x = x[..., None]
        mean, std = (np.array(v, dtype="float32") for v in (self.mean, self.std))
        return (x.astype("float32") / 255.0 - mean) / std, y.astype("int64")
