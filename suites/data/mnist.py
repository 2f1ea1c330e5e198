"""MNIST: locate the IDX files, check them, or write learnable look-alikes.

Synthetic data is written as the real MNIST IDX files (torchvision's
``<root>/MNIST/raw`` layout) and read back through the very same loader, so
tests exercise the real path.
"""

from __future__ import annotations

import shutil
import struct
from pathlib import Path
from typing import TYPE_CHECKING

from gpu_probe.shapes import JsonObject
from suites.data.dataset import LOOK_ALIKE, Dataset, require_regular_file, roll_each, write_whole
from suites.data.download import Remote, cached_or_fetched, gunzip_into, md5
from suites.data.options import DataConfig
from suites.errors import DataError

if TYPE_CHECKING:  # for the annotations only
    import numpy as np

# The synthetic stand-in's training images: the mnist-torch recipe's one epoch (46 steps of 512) reaches its 99 %
# target on them (100.00 % on a 2-core CPU; 6000 images, 11 steps, left it at 28.9 %).
SYNTHETIC_TRAIN = 24000

MNIST_FILES = {
    "train-images-idx3-ubyte": (0x0803, "images"),
    "train-labels-idx1-ubyte": (0x0801, "labels"),
    "t10k-images-idx3-ubyte": (0x0803, "images"),
    "t10k-labels-idx1-ubyte": (0x0801, "labels"),
}

# What a mirror serves (torchvision's layout: <base>/<file>.gz) and the MD5 of each uncompressed file, the
# published originals (the same as ../shared/data/README.md lists).
REMOTE = Remote("MNIST", "MNIST/raw", tuple(f"{name}.gz" for name in MNIST_FILES), gunzip_into, {
    "train-images-idx3-ubyte": "6bbc9ace898e44ae57da46a324031adb",
    "train-labels-idx1-ubyte": "a25bea736e30d166cdddb491f175f624",
    "t10k-images-idx3-ubyte": "2646ac647ad5339dbf082846283269ea",
    "t10k-labels-idx1-ubyte": "27ae3e4e09519cfbb04c329615203637",
})


def write_idx(path: Path, array: np.ndarray) -> None:
    """Write a uint8 array as an IDX file (big-endian dims), atomically."""
    import numpy as np

    arr = np.ascontiguousarray(array, dtype=np.uint8)
    header = struct.pack(">HBB", 0, 0x08, arr.ndim) + struct.pack(f">{arr.ndim}I", *arr.shape)
    write_whole(path, header + arr.tobytes())


def check_idx(path: Path) -> None:
    """Reject files whose header or size is not a valid uint8 IDX file."""
    magic_expected = MNIST_FILES[path.name][0]
    raw_size = path.stat().st_size
    with path.open("rb") as fh:
        head = fh.read(4)
        if len(head) < 4:
            raise DataError(f"{path}: truncated IDX file ({raw_size} bytes)")
        magic = struct.unpack(">I", head)[0]
        if magic != magic_expected:
            raise DataError(f"{path}: not the expected IDX file (magic {magic:#x}, want {magic_expected:#x})")
        ndim = magic & 0xFF
        head = fh.read(4 * ndim)
        if len(head) < 4 * ndim:
            raise DataError(f"{path}: truncated IDX header ({raw_size} bytes)")
        dims = struct.unpack(f">{ndim}I", head)
    n = 1
    for d in dims:
        n *= d
    if raw_size != 4 + 4 * ndim + n:
        raise DataError(f"{path}: size {raw_size} bytes does not match its header {dims}")


def read_idx(path: Path) -> np.ndarray:
    """An IDX file as a numpy uint8 array (for frameworks without torchvision's reader)."""
    import numpy as np

    check_idx(path)
    raw = path.read_bytes()
    ndim = raw[3]
    dims = struct.unpack(f">{ndim}I", raw[4 : 4 + 4 * ndim])
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def load_numpy(root: str, train: bool) -> tuple[np.ndarray, np.ndarray]:
    """(images N x 28 x 28, labels N) uint8 from ``<root>/MNIST/raw``."""
    raw = Path(root) / "MNIST" / "raw"
    prefix = "train" if train else "t10k"
    return read_idx(raw / f"{prefix}-images-idx3-ubyte"), read_idx(raw / f"{prefix}-labels-idx1-ubyte")


def synthesize_mnist(root: Path, n_train: int, n_test: int, seed: int = 0) -> Path:
    """Learnable MNIST look-alikes: one blurred template per class, shifted and noised."""
    import numpy as np

    raw = root / "MNIST" / "raw"
    if all((raw / name).exists() for name in MNIST_FILES):
        return root
    raw.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    templates = (rng.random((10, 28, 28)) > 0.8).astype(np.float32)
    for _ in range(3):  # box blur: blobs and strokes rather than salt-and-pepper
        templates = sum(np.roll(templates, s, axis=a) for a in (1, 2) for s in (-1, 0, 1)) / 6.0
    templates = templates / templates.max(axis=(1, 2), keepdims=True)
    for prefix, n in (("train", n_train), ("t10k", n_test)):
        labels = rng.integers(0, 10, size=n).astype(np.uint8)
        images = roll_each(templates[labels], rng.integers(-2, 3, size=(n, 2)))
        images = images * rng.uniform(0.6, 1.0, size=(n, 1, 1)) + rng.normal(0, 0.15, size=images.shape)
        write_idx(raw / f"{prefix}-images-idx3-ubyte", np.clip(images * 255, 0, 255))
        write_idx(raw / f"{prefix}-labels-idx1-ubyte", labels)
    return root


def check_split(raw: Path, prefix: str) -> None:
    """Images and labels that agree: 28 x 28 images, one label each, every label a digit. A file that passes the
    IDX checks can still hold any of these wrongs, and a guest would train and score on it without a word."""
    images, labels = read_idx(raw / f"{prefix}-images-idx3-ubyte"), read_idx(raw / f"{prefix}-labels-idx1-ubyte")
    if images.ndim != 3 or images.shape[1:] != (28, 28):
        raise DataError(f"{raw / f'{prefix}-images-idx3-ubyte'}: images are {'x'.join(map(str, images.shape[1:]))}, "
                        "not 28x28")
    if labels.ndim != 1 or len(labels) != len(images):
        raise DataError(f"{raw}: {len(images)} {prefix} images but {len(labels)} labels")
    if len(labels) and int(labels.max()) > 9:
        bad = int((labels > 9).sum())
        raise DataError(f"{raw / f'{prefix}-labels-idx1-ubyte'}: {bad} label(s) out of range 0..9 "
                        f"(largest {int(labels.max())})")


def check_real(root: Path) -> str:
    """Every MNIST file under ``root`` a plain, valid IDX file, and the splits consistent (DataError otherwise);
    'real' where each is the published file (its MD5), else LOOK_ALIKE: valid MNIST-shaped data, not MNIST (a
    2048-image stand-in under data.root must not report its accuracy as MNIST's)."""
    raw = root / "MNIST" / "raw"
    for name in MNIST_FILES:
        require_regular_file(raw / name, "MNIST file")
        check_idx(raw / name)
    for prefix in ("train", "t10k"):
        check_split(raw, prefix)
    return "real" if all(md5(raw / name) == REMOTE.md5[name] for name in MNIST_FILES) else LOOK_ALIKE


def resolve_mnist(cfg: DataConfig, seed: int = 0) -> JsonObject:
    """MNIST under data.root, else a verified download in the cache (data.download), else a synthetic stand-in;
    returns the guest's data spec."""
    root = Path(cfg.root)
    raw = root / "MNIST" / "raw"
    present = [name for name in MNIST_FILES if (raw / name).exists()]
    if len(present) == len(MNIST_FILES):
        source = check_real(root)
        note = {} if source == "real" else {"note": f"the MNIST files under {raw} are not the published ones "
                                                   "(MD5s differ): its accuracy is not an MNIST accuracy"}
        return {"dataset": "mnist", "root": str(root), "source": source, **note}
    if present:
        missing = sorted(set(MNIST_FILES) - set(present))
        raise DataError(f"MNIST under {raw} is incomplete: missing {', '.join(missing)}")
    cached, why = cached_or_fetched(cfg, REMOTE, cfg.mnist_url)
    if cached is not None:
        check_real(cached)
        return {"dataset": "mnist", "root": str(cached), "source": "real",
                "note": f"real MNIST downloaded into {cached} (no MNIST under {raw})"}
    if not cfg.synthetic:
        raise DataError(f"MNIST not found under {raw} ({why}; set data.root=... or data.synthetic=true)")
    n_train = cfg.train_images(SYNTHETIC_TRAIN)
    cache = Path(cfg.cache_dir) / f"synthetic-mnist-{n_train}-{cfg.synthetic_test}-{seed}"
    try:
        synthesize_mnist(cache, n_train, cfg.synthetic_test, seed)
        check_real(cache)
    except DataError:  # a cache cut short or edited: made again, not failed inside every later run's guests
        shutil.rmtree(cache, ignore_errors=True)
        synthesize_mnist(cache, n_train, cfg.synthetic_test, seed)
    return {"dataset": "mnist", "root": str(cache), "source": "synthetic",
            "note": f"synthetic: no MNIST under {raw}; {why}"}


MNIST = Dataset("mnist", resolve_mnist, load_numpy, mean=(0.1307,), std=(0.3081,), real_train=60_000)
