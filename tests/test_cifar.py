"""CIFAR-10 files: checksum before unpickling, a restricted unpickler, and real training on them."""

import pickle
from pathlib import Path

import numpy as np
import pytest

from suites.config.paths import absolute_paths
from suites.data import cifar
from suites.data.options import DataConfig
from suites.errors import DataError


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return cifar.synthesize(tmp_path_factory.mktemp("cifar"), n_train=1000, n_test=300, seed=2)


def test_synthetic_files_have_the_published_layout(tiny: Path):
    folder = tiny / cifar.FOLDER
    assert sorted(p.name for p in folder.iterdir()) == sorted([*cifar.TRAIN, "test_batch", "batches.meta",
                                                                cifar.MANIFEST])
    batch = pickle.loads((folder / "data_batch_1").read_bytes(), encoding="bytes")
    assert batch[b"data"].shape == (200, 3072) and batch[b"data"].dtype == np.uint8 and len(batch[b"labels"]) == 200
    x, y = cifar.load_split(str(tiny), train=True)
    assert x.shape == (1000, 32, 32, 3) and set(np.unique(y)) == set(range(10))


def test_resolve_reports_synthetic_and_real_sources(tiny: Path, tmp_path: Path):
    assert cifar.resolve(absolute_paths(DataConfig(root=str(tiny)), tmp_path))["source"] == "synthetic"
    given = DataConfig(root="absent", cache_dir="c", synthetic_train=50, synthetic_test=20)
    spec = cifar.resolve(absolute_paths(given, tmp_path))
    assert spec["source"] == "synthetic" and (Path(spec["root"]) / cifar.FOLDER / cifar.MANIFEST).exists()
    with pytest.raises(DataError, match="CIFAR-10 not found"):
        cifar.resolve(absolute_paths(DataConfig(root="absent", synthetic=False), tmp_path))


def test_files_claiming_to_be_real_must_match_the_published_md5(tmp_path: Path):
    folder = cifar.synthesize(tmp_path, 50, 20) / cifar.FOLDER
    (folder / cifar.MANIFEST).unlink()  # now they pose as the real dataset
    with pytest.raises(DataError, match="does not match the published CIFAR-10"):
        cifar.resolve(absolute_paths(DataConfig(root=str(tmp_path)), tmp_path))
    with pytest.raises(DataError, match="refusing to unpickle"):
        cifar.load_split(str(tmp_path), train=False)


class Boom:
    def __reduce__(self):
        return (print, ("pwned",))


def test_a_pickle_that_would_run_code_is_refused_even_with_a_matching_manifest(tmp_path: Path):
    folder = cifar.synthesize(tmp_path, 50, 20) / cifar.FOLDER
    (folder / "test_batch").write_bytes(pickle.dumps({b"data": Boom(), b"labels": [1]}))
    lines = [f"{cifar.md5(folder / n)}  {n}" for n in [*cifar.TRAIN, "test_batch", "batches.meta"]]
    (folder / cifar.MANIFEST).write_text("\n".join(lines) + "\n")
    with pytest.raises(DataError, match="refusing to unpickle builtins.print"):
        cifar.load_split(str(tmp_path), train=False)
