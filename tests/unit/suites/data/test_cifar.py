"""Tests of ``suites/data/cifar.py``."""

from __future__ import annotations

import pickle
from pathlib import Path
import numpy as np
import pytest
from suites.config.paths import absolute_paths
from suites.data import cifar
from suites.data.options import DataConfig
from suites.errors import DataError
import io
import pickle
import tarfile
from pathlib import Path
import pytest
from suites.config.paths import absolute_paths
from suites.data import cifar, mnist
from suites.errors import DataError
import re
from pathlib import Path
import pytest
from tests.support.cifar_files import _rows, cifar_with
from tests.support.mirror import cfg_for, mirror_dir, nothing_cached, serve


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return cifar.synthesize(tmp_path_factory.mktemp("cifar"), n_train=1000, n_test=300, seed=2)


class Boom:
    def __reduce__(self):
        return (print, ("pwned",))


def cifar_archive(batches: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, data in batches.items():
            info = tarfile.TarInfo(f"{cifar.FOLDER}/{name}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        evil = tarfile.TarInfo("../../escaped")  # never written anywhere: only named batches are taken out
        evil.size = 4
        tar.addfile(evil, io.BytesIO(b"evil"))
    return buf.getvalue()


CIFAR_CASES = {  # batches that pass the MD5 and unpickler gates but are not CIFAR-10
    "not-a-dict": (lambda: [1, 2, 3], "not a CIFAR-10 batch (a dict with data and labels), got list"),
    "label-99": (lambda: {b"data": _rows(4), b"labels": [1, 2, 99, 3]},
                 "1 label(s) outside the classes 0..9 (e.g. 99)"),
    "row-size": (lambda: {b"data": _rows(4, 3000), b"labels": [1, 2, 3, 4]}, "rows of 3072 values"),
    "object-dtype": (lambda: {b"data": _rows(4, dtype="object"), b"labels": [1] * 4}, "must be uint8 rows"),
    "float-dtype": (lambda: {b"data": _rows(4, dtype="float64"), b"labels": [1] * 4}, "must be uint8 rows"),
    "label-count": (lambda: {b"data": _rows(4), b"labels": [1, 2]}, "2 labels for 4 images"),
    "label-text": (lambda: {b"data": _rows(2), b"labels": [b"cat", b"dog"]}, "labels are not integers"),
}


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


def test_a_pickle_that_would_run_code_is_refused_even_with_a_matching_manifest(tmp_path: Path):
    folder = cifar.synthesize(tmp_path, 50, 20) / cifar.FOLDER
    (folder / "test_batch").write_bytes(pickle.dumps({b"data": Boom(), b"labels": [1]}))
    lines = [f"{cifar.md5(folder / n)}  {n}" for n in [*cifar.TRAIN, "test_batch", "batches.meta"]]
    (folder / cifar.MANIFEST).write_text("\n".join(lines) + "\n")
    with pytest.raises(DataError, match="refusing to unpickle builtins.print"):
        cifar.load_split(str(tmp_path), train=False)


def test_cifar_download_with_wrong_batches_or_junk_is_refused(tmp_path: Path, mirror_dir: Path, serve):
    synthetic = cifar.synthesize(tmp_path / "lookalike", 50, 10) / cifar.FOLDER
    archive = mirror_dir / "cifar-10-python.tar.gz"
    archive.write_bytes(cifar_archive({p.name: p.read_bytes() for p in synthetic.iterdir()
                                       if p.name in cifar.PUBLISHED_MD5}))
    m = serve()
    spec = cifar.resolve(absolute_paths(cfg_for(tmp_path, m.url), tmp_path))
    assert spec["source"] == "synthetic" and "not the published" in spec["note"], spec["note"]
    assert nothing_cached(tmp_path) and not (tmp_path.parent / "escaped").exists()
    archive.write_bytes(pickle.dumps({"not": "a tar"}))
    with pytest.raises(DataError, match="not a readable tar archive"):
        cifar.resolve(absolute_paths(cfg_for(tmp_path, m.url, mode="true"), tmp_path))
    assert nothing_cached(tmp_path)


@pytest.mark.parametrize("case", sorted(CIFAR_CASES))
def test_cifar_batches_that_are_not_cifar_are_refused_before_start(tmp_path: Path, case: str):
    from suites.data import cifar
    from suites.data.options import DataConfig
    from suites.errors import DataError

    payload, says = CIFAR_CASES[case]
    root = cifar_with(tmp_path / "data", "test_batch", payload())
    with pytest.raises(DataError, match=re.escape(says)):
        cifar.resolve(DataConfig(root=str(root), cache_dir=str(tmp_path)))
