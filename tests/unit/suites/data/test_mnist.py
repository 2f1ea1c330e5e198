"""Tests of ``suites/data/mnist.py``."""

from __future__ import annotations

from pathlib import Path
import numpy as np
import pytest
from gpu_probe import vocab
from suites.config.paths import absolute_paths
from suites.data.mnist import check_idx, resolve_mnist, synthesize_mnist, write_idx
from suites.data.options import DataConfig
from suites.errors import DataError
from suites.render.tables import synthetic_mark
from tests.support.helpers import HAVE_MNIST, MNIST_ROOT
import gzip
from pathlib import Path
import pytest
from suites.config.paths import absolute_paths
from suites.data import cifar, mnist
from suites.errors import DataError
from tests.support.helpers import HAVE_MNIST, MNIST_ROOT, SMOKE, free_port, run_bench
from tests.support.mirror import cfg_for, gz_mnist, mirror_dir, nothing_cached, serve


@pytest.mark.heavy
def test_synthetic_files_are_real_idx_read_by_torchvision(tmp_path: Path):
    from torchvision.datasets import MNIST

    synthesize_mnist(tmp_path, n_train=300, n_test=100, seed=1)
    train = MNIST(str(tmp_path), train=True, download=False)
    test = MNIST(str(tmp_path), train=False, download=False)
    assert tuple(train.data.shape) == (300, 28, 28) and tuple(test.data.shape) == (100, 28, 28)
    assert set(train.targets.unique().tolist()) == set(range(10))
    assert train.data.float().std() > 20  # images, not blank files


def test_synthesis_is_deterministic(tmp_path: Path):
    a, b = synthesize_mnist(tmp_path / "a", 50, 20, seed=3), synthesize_mnist(tmp_path / "b", 50, 20, seed=3)
    for name in ("train-images-idx3-ubyte", "t10k-labels-idx1-ubyte"):
        assert (a / "MNIST/raw" / name).read_bytes() == (b / "MNIST/raw" / name).read_bytes()


def test_idx_round_trip_header(tmp_path: Path):
    path = tmp_path / "train-labels-idx1-ubyte"
    write_idx(path, np.arange(7, dtype=np.uint8))
    raw = path.read_bytes()
    assert raw[:4] == b"\x00\x00\x08\x01" and int.from_bytes(raw[4:8], "big") == 7 and raw[8:] == bytes(range(7))
    check_idx(path)


@pytest.mark.parametrize("damage", ["truncated-body", "truncated-header", "wrong-magic"])
def test_damaged_idx_is_rejected(tmp_path: Path, damage: str):
    path = tmp_path / "train-images-idx3-ubyte"
    write_idx(path, np.zeros((4, 28, 28), np.uint8))
    raw = path.read_bytes()
    path.write_bytes({"truncated-body": raw[:-10], "truncated-header": raw[:6],
                      "wrong-magic": b"\x00\x00\x08\x01" + raw[4:]}[damage])
    with pytest.raises(DataError):
        check_idx(path)


def test_resolve_prefers_files_under_the_root_and_says_they_are_not_the_published_mnist(tmp_path: Path):
    """MNIST-shaped files whose MD5s are not the published ones are a look-alike, said with the accuracy (a
    2048-image stand-in under data.root must not report 98 % as an MNIST accuracy)."""
    synthesize_mnist(tmp_path / "real", 20, 20)
    spec = resolve_mnist(absolute_paths(DataConfig(root="real"), tmp_path))
    assert spec["source"] == "look-alike" and spec["root"] == str((tmp_path / "real").resolve())
    assert "not the published ones (MD5s differ)" in spec["note"]
    assert synthetic_mark(spec, vocab.TEST_ACCURACY.key, {vocab.TEST_ACCURACY.key: 0.98}) == " (look-alike)"


@pytest.mark.skipif(not HAVE_MNIST, reason=f"real MNIST not found under {MNIST_ROOT} (set BENCH_TEST_MNIST_ROOT)")
def test_the_published_mnist_is_real(tmp_path: Path):
    assert resolve_mnist(absolute_paths(DataConfig(root=str(MNIST_ROOT)), tmp_path))["source"] == "real"


def test_a_corrupt_synthetic_cache_is_made_again(tmp_path: Path):
    """A cache cut short (a disk that filled, a killed run) must not fail every later run inside its guests."""
    cfg = DataConfig(root="absent", cache_dir="cache", synthetic_train=40, synthetic_test=20)
    spec = resolve_mnist(absolute_paths(cfg, tmp_path))
    images = Path(spec["root"]) / "MNIST/raw/train-images-idx3-ubyte"
    whole = images.read_bytes()
    images.write_bytes(whole[:100])
    assert resolve_mnist(absolute_paths(cfg, tmp_path)) == spec and images.read_bytes() == whole


def test_resolve_missing_and_incomplete_data_are_clear_errors(tmp_path: Path):
    with pytest.raises(DataError, match="MNIST not found"):
        resolve_mnist(absolute_paths(DataConfig(root="absent", synthetic=False), tmp_path))
    synthesize_mnist(tmp_path / "partial", 20, 20)
    (tmp_path / "partial/MNIST/raw/t10k-labels-idx1-ubyte").unlink()
    with pytest.raises(DataError, match="incomplete: missing t10k-labels-idx1-ubyte"):
        resolve_mnist(absolute_paths(DataConfig(root="partial"), tmp_path))


@pytest.mark.parametrize("case,expected", [
    ("labels-out-of-range", "label(s) out of range 0..9 (largest 77)"),
    ("fewer-images-than-labels", "250 t10k images but 500 labels"),
    ("images-not-28x28", "images are 14x28, not 28x28"),
])
def test_mnist_whose_images_and_labels_disagree_is_refused_before_any_guest(tmp_path: Path, case: str, expected: str):
    """Such files passed every IDX check and were scored: labels of 77 gave 40.25 % accuracy, status ok."""
    synthesize_mnist(tmp_path, 500, 500)
    raw = tmp_path / "MNIST" / "raw"
    if case == "labels-out-of-range":
        labels = np.zeros(500, dtype=np.uint8)
        labels[::2] = 77
        write_idx(raw / "t10k-labels-idx1-ubyte", labels)
    elif case == "fewer-images-than-labels":
        write_idx(raw / "t10k-images-idx3-ubyte", np.zeros((250, 28, 28), dtype=np.uint8))
    else:
        write_idx(raw / "t10k-images-idx3-ubyte", np.zeros((500, 14, 28), dtype=np.uint8))
    with pytest.raises(DataError, match=expected.replace("(", r"\(").replace(")", r"\)")):
        resolve_mnist(absolute_paths(DataConfig(root=str(tmp_path)), tmp_path))


@pytest.mark.timeout(30)  # reading a FIFO would block the runner forever
@pytest.mark.parametrize("kind", ["a FIFO", "a directory"])
def test_data_file_that_is_not_a_regular_file_is_refused_at_once(tmp_path: Path, kind: str):
    import os

    synthesize_mnist(tmp_path, 20, 20)
    target = tmp_path / "MNIST" / "raw" / "t10k-labels-idx1-ubyte"
    target.unlink()
    os.mkfifo(target) if kind == "a FIFO" else target.mkdir()
    with pytest.raises(DataError, match=f"MNIST file {target} is {kind}, not a regular file"):
        resolve_mnist(absolute_paths(DataConfig(root=str(tmp_path)), tmp_path))


def test_a_corrupted_mnist_download_is_refused_and_nothing_cached(tmp_path: Path, mirror_dir: Path, serve):
    source = mnist.synthesize_mnist(tmp_path / "lookalike", 50, 10) / "MNIST" / "raw"  # not the published files
    gz_mnist(source, mirror_dir)
    m = serve()
    spec = mnist.resolve_mnist(absolute_paths(cfg_for(tmp_path, m.url), tmp_path))  # auto: synthetic, saying why
    assert spec["source"] == "synthetic"
    assert "download failed" in spec["note"] and "not the published" in spec["note"], spec["note"]
    assert nothing_cached(tmp_path)
    with pytest.raises(DataError) as err:  # true: one line, nothing cached
        mnist.resolve_mnist(absolute_paths(cfg_for(tmp_path, m.url, mode="true"), tmp_path))
    assert "data.download=true" in str(err.value) and "MD5" in str(err.value) and "\n" not in str(err.value)
    assert nothing_cached(tmp_path)


def test_a_damaged_gzip_stream_is_refused(tmp_path: Path, mirror_dir: Path, serve):
    for name in mnist.MNIST_FILES:
        (mirror_dir / f"{name}.gz").write_bytes(gzip.compress(b"x" * 1000, mtime=0)[:-12])  # truncated
    m = serve()
    with pytest.raises(DataError, match="not a gzip file"):
        mnist.resolve_mnist(absolute_paths(cfg_for(tmp_path, m.url, mode="true"), tmp_path))
    assert nothing_cached(tmp_path)


def test_unreachable_mirror_falls_back_to_synthetic_or_fails_when_asked(tmp_path: Path):
    url = f"http://127.0.0.1:{free_port()}/"  # nothing listens there
    spec = mnist.resolve_mnist(absolute_paths(cfg_for(tmp_path, url), tmp_path))
    assert spec["source"] == "synthetic" and "download failed" in spec["note"] and url in spec["note"]
    with pytest.raises(DataError, match="data.download=true"):
        mnist.resolve_mnist(absolute_paths(cfg_for(tmp_path, url, mode="true"), tmp_path))
    off = mnist.resolve_mnist(absolute_paths(cfg_for(tmp_path, "http://never.invalid/", mode="false"), tmp_path))
    assert off["source"] == "synthetic" and "data.download=false" in off["note"]
    assert nothing_cached(tmp_path)
