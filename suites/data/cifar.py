"""CIFAR-10 in its python on-disk format (``cifar-10-batches-py/``), safely.

The batches are pickles, and unpickling runs code, so a file is only opened
when its MD5 matches the published one, or the one this module wrote into
``SYNTHETIC.md5`` when it generated look-alike data. Even then the unpickler
admits nothing but the numpy types the real files contain.
"""

from __future__ import annotations

import io
import pickle
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpu_probe.shapes import JsonObject
from suites.data.dataset import Dataset, require_regular_file, roll_each, write_whole
from suites.data.download import Remote, cached_or_fetched, md5, untar_flat
from suites.data.options import DataConfig
from suites.errors import DataError

if TYPE_CHECKING:  # for the annotations only
    import numpy as np

FOLDER = "cifar-10-batches-py"
SYNTHETIC_TRAIN = 6000  # the synthetic stand-in's training images (data.synthetic_train=null)
PUBLISHED_MD5 = {  # https://www.cs.toronto.edu/~kriz/cifar.html, as torchvision checks them
    "data_batch_1": "c99cafc152244af753f735de768cd75f",
    "data_batch_2": "d4bba439e000b95fd0a9bffe97cbabec",
    "data_batch_3": "54ebc095f3ab1f0389bbae665268c751",
    "data_batch_4": "634d18415352ddfa80567beed471001a",
    "data_batch_5": "482c414d41f54cd18b22e5b47cb7c3cb",
    "test_batch": "40351d587109b95175f43aff81a1287e",
    "batches.meta": "5ff9c542aee3614f3951f8cda6e48888",
}
TRAIN = [f"data_batch_{i}" for i in range(1, 6)]
# The publisher's archive; only its batches are taken out, each checked against PUBLISHED_MD5.
REMOTE = Remote("CIFAR-10", FOLDER, ("cifar-10-python.tar.gz",), untar_flat(set(PUBLISHED_MD5)), PUBLISHED_MD5)
MANIFEST = "SYNTHETIC.md5"
CLASSES = ["airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"]
SAFE_GLOBALS = {  # what numpy needs to rebuild an ndarray, and nothing else
    ("numpy.core.multiarray", "_reconstruct"), ("numpy._core.multiarray", "_reconstruct"),
    ("numpy", "ndarray"), ("numpy", "dtype"),
}


class _SafeUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        if (module, name) not in SAFE_GLOBALS:
            raise DataError(f"refusing to unpickle {module}.{name} from a CIFAR-10 file")
        return super().find_class(module, name)


def trusted_checksums(folder: Path) -> tuple[dict[str, str], str]:
    """The checksums files in ``folder`` must match, and whether they are real or synthetic."""
    manifest = folder / MANIFEST
    if manifest.exists():
        require_regular_file(manifest, "CIFAR-10 manifest")
        try:
            sums = dict(line.split()[::-1] for line in manifest.read_text().splitlines() if line.strip())
        except (ValueError, UnicodeDecodeError):
            raise DataError(f"{manifest}: not a checksum manifest (lines of '<md5>  <file>')") from None
        return sums, "synthetic"
    return PUBLISHED_MD5, "real"


def load_batch(path: Path, expected_md5: str) -> dict[bytes, Any]:
    actual = md5(path)
    if actual != expected_md5:
        raise DataError(f"{path}: MD5 {actual} is not the expected {expected_md5}; refusing to unpickle it")
    return unpickle_batch(path)


def unpickle_batch(path: Path) -> dict[bytes, Any]:
    """A batch whose MD5 the caller has checked, through the unpickler that admits only numpy's types."""
    try:
        return _SafeUnpickler(io.BytesIO(path.read_bytes()), encoding="bytes").load()
    except (pickle.UnpicklingError, EOFError, ValueError) as exc:
        raise DataError(f"{path}: not a CIFAR-10 batch ({exc})") from exc


def check_batch(batch: Any, path: Path) -> int:
    """A batch as the published files hold it, or one DataError line: a dict whose ``data`` is uint8 rows of
    3072 values (32 x 32 x 3) and whose ``labels`` are one class 0..9 per row. Its row count."""
    import numpy as np

    if not isinstance(batch, dict) or b"data" not in batch or b"labels" not in batch:
        raise DataError(f"{path}: not a CIFAR-10 batch (a dict with data and labels), got {type(batch).__name__}")
    data = batch[b"data"]
    if not isinstance(data, np.ndarray) or data.dtype != np.uint8 or data.ndim != 2 or data.shape[1] != 3072:
        raise DataError(f"{path}: data must be uint8 rows of 3072 values (32x32x3), got "
                        f"{getattr(data, 'dtype', type(data).__name__)} {getattr(data, 'shape', '')}")
    try:
        labels = np.asarray(batch[b"labels"], dtype=np.int64)
    except (TypeError, ValueError):
        raise DataError(f"{path}: labels are not integers") from None
    if labels.ndim != 1 or len(labels) != len(data):
        raise DataError(f"{path}: {labels.size} labels for {len(data)} images")
    bad = labels[(labels < 0) | (labels > 9)]
    if bad.size:
        raise DataError(f"{path}: {bad.size} label(s) outside the classes 0..9 (e.g. {int(bad[0])})")
    return len(data)


def load_split(root: str, train: bool) -> tuple[np.ndarray, np.ndarray]:
    """(images uint8 N x 32 x 32 x 3, labels int64 N) of one split, checksum-verified."""
    import numpy as np

    folder = Path(root) / FOLDER
    sums, _ = trusted_checksums(folder)
    images, labels = [], []
    for name in TRAIN if train else ["test_batch"]:
        batch = load_batch(folder / name, sums.get(name, "?"))
        images.append(np.asarray(batch[b"data"], dtype=np.uint8).reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1))
        labels.extend(batch[b"labels"])
    return np.concatenate(images), np.asarray(labels, dtype=np.int64)


def _write_batch(path: Path, images: np.ndarray, labels: np.ndarray, name: str) -> None:
    payload = {b"batch_label": name.encode(), b"labels": [int(v) for v in labels],
               b"data": images.transpose(0, 3, 1, 2).reshape(len(images), -1),
               b"filenames": [f"synthetic_{i}.png".encode() for i in range(len(labels))]}
    write_whole(path, pickle.dumps(payload, protocol=4))  # same dict layout as the published files


def synthesize(root: Path, n_train: int, n_test: int, seed: int = 0) -> Path:
    """Learnable CIFAR-10 look-alikes: a colour pattern per class, shifted, flipped and noised."""
    import numpy as np

    if (root / FOLDER / MANIFEST).exists():
        return root
    rng = np.random.default_rng(seed)
    coarse = rng.random((10, 8, 8, 3))
    templates = coarse.repeat(4, axis=1).repeat(4, axis=2)  # 32 x 32 blocks of colour per class

    def split(n: int) -> tuple[np.ndarray, np.ndarray]:
        labels = rng.integers(0, 10, size=n)
        imgs = roll_each(templates[labels], rng.integers(-3, 4, size=(n, 2)))
        flip = rng.random(n) < 0.5
        imgs[flip] = imgs[flip][:, :, ::-1]
        imgs = imgs * rng.uniform(0.6, 1.0, size=(n, 1, 1, 1)) + rng.normal(0, 0.12, size=imgs.shape)
        return np.clip(imgs * 255, 0, 255).astype(np.uint8), labels

    return write_look_alike(root, split(n_train), split(n_test))


def write_look_alike(root: Path, train: tuple[np.ndarray, np.ndarray], test: tuple[np.ndarray, np.ndarray]) -> Path:
    """``(images uint8 N x 32 x 32 x 3, labels)`` of each split written as the published files are laid out under
    ``root``, with the manifest that marks them as not the published ones (written last: its presence means
    complete); ``root``."""
    folder = root / FOLDER
    folder.mkdir(parents=True, exist_ok=True)
    per_batch = -(-len(train[0]) // 5)
    for i, name in enumerate(TRAIN):
        sl = slice(i * per_batch, (i + 1) * per_batch)
        _write_batch(folder / name, train[0][sl], train[1][sl], f"training batch {i + 1} of 5")
    _write_batch(folder / "test_batch", *test, "testing batch 1 of 1")
    meta = {b"label_names": [c.encode() for c in CLASSES], b"num_cases_per_batch": per_batch, b"num_vis": 3072}
    (folder / "batches.meta").write_bytes(pickle.dumps(meta, protocol=4))
    lines = [f"{md5(folder / name)}  {name}" for name in [*TRAIN, "test_batch", "batches.meta"]]
    (folder / MANIFEST).write_text("\n".join(lines) + "\n")
    return root


def check_real(folder: Path) -> str:
    """Every batch under ``folder`` present, a plain file, its MD5 the trusted one, and a well-formed batch once
    safely unpickled (DataError otherwise); "real" or "synthetic"."""
    sums, source = trusted_checksums(folder)
    for name in [*TRAIN, "test_batch"]:
        if not (folder / name).exists():
            raise DataError(f"CIFAR-10 under {folder} is incomplete: missing {name}")
        require_regular_file(folder / name, "CIFAR-10 batch")
        if md5(folder / name) != sums.get(name):
            raise DataError(f"{folder / name}: MD5 does not match the published CIFAR-10 file; "
                            "refusing to unpickle it")
        # then safely unpickled (the MD5 just checked: not hashed again) and checked: a file that passes the gate
        # but holds something else would end in an IndexError or ValueError inside the guest
        check_batch(unpickle_batch(folder / name), folder / name)
    return source


def resolve(cfg: DataConfig, seed: int = 0) -> JsonObject:
    """CIFAR-10 under data.root (verified), else a verified download in the cache (data.download), else a
    synthetic stand-in; the guest's data spec."""
    root = Path(cfg.root)
    folder = root / FOLDER
    if folder.is_dir():
        return {"dataset": "cifar10", "root": str(root), "source": check_real(folder)}
    cached, why = cached_or_fetched(cfg, REMOTE, cfg.cifar10_url)
    if cached is not None:
        check_real(cached / FOLDER)
        return {"dataset": "cifar10", "root": str(cached), "source": "real",
                "note": f"real CIFAR-10 downloaded into {cached} (none under {folder})"}
    if not cfg.synthetic:
        raise DataError(f"CIFAR-10 not found under {folder} ({why}; set data.root=... or data.synthetic=true)")
    n_train = cfg.train_images(SYNTHETIC_TRAIN)
    cache = Path(cfg.cache_dir) / f"synthetic-cifar10-{n_train}-{cfg.synthetic_test}-{seed}"
    synthesize(cache, n_train, cfg.synthetic_test, seed)
    return {"dataset": "cifar10", "root": str(cache), "source": "synthetic",
            "note": f"synthetic: no CIFAR-10 under {folder}; {why}"}


CIFAR10 = Dataset("cifar10", resolve, load_split, mean=(0.4914, 0.4822, 0.4465), std=(0.2470, 0.2435, 0.2616),
                  real_train=50_000)
