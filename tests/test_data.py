"""MNIST files: real IDX format in, torchvision's reader out; bad files rejected."""

from pathlib import Path

import numpy as np
import pytest

from gpu_probe import vocab
from suites.config.paths import absolute_paths
from suites.data.mnist import check_idx, resolve_mnist, synthesize_mnist, write_idx
from suites.data.options import DataConfig
from suites.errors import DataError
from suites.render.tables import synthetic_mark

from .helpers import HAVE_MNIST, MNIST_ROOT


def test_synthetic_files_are_real_idx_read_by_torchvision(tmp: Path):
    from torchvision.datasets import MNIST

    synthesize_mnist(tmp, n_train=300, n_test=100, seed=1)
    train = MNIST(str(tmp), train=True, download=False)
    test = MNIST(str(tmp), train=False, download=False)
    assert tuple(train.data.shape) == (300, 28, 28) and tuple(test.data.shape) == (100, 28, 28)
    assert set(train.targets.unique().tolist()) == set(range(10))
    assert train.data.float().std() > 20  # images, not blank files


def test_synthesis_is_deterministic(tmp: Path):
    a, b = synthesize_mnist(tmp / "a", 50, 20, seed=3), synthesize_mnist(tmp / "b", 50, 20, seed=3)
    for name in ("train-images-idx3-ubyte", "t10k-labels-idx1-ubyte"):
        assert (a / "MNIST/raw" / name).read_bytes() == (b / "MNIST/raw" / name).read_bytes()


def test_idx_round_trip_header(tmp: Path):
    path = tmp / "train-labels-idx1-ubyte"
    write_idx(path, np.arange(7, dtype=np.uint8))
    raw = path.read_bytes()
    assert raw[:4] == b"\x00\x00\x08\x01" and int.from_bytes(raw[4:8], "big") == 7 and raw[8:] == bytes(range(7))
    check_idx(path)


@pytest.mark.parametrize("damage", ["truncated-body", "truncated-header", "wrong-magic"])
def test_damaged_idx_is_rejected(tmp: Path, damage: str):
    path = tmp / "train-images-idx3-ubyte"
    write_idx(path, np.zeros((4, 28, 28), np.uint8))
    raw = path.read_bytes()
    path.write_bytes({"truncated-body": raw[:-10], "truncated-header": raw[:6],
                      "wrong-magic": b"\x00\x00\x08\x01" + raw[4:]}[damage])
    with pytest.raises(DataError):
        check_idx(path)


def test_resolve_prefers_files_under_the_root_and_says_they_are_not_the_published_mnist(tmp: Path):
    """MNIST-shaped files whose MD5s are not the published ones are a look-alike, said with the accuracy (a
    2048-image stand-in under data.root used to report 98 % as an MNIST accuracy)."""
    synthesize_mnist(tmp / "real", 20, 20)
    spec = resolve_mnist(absolute_paths(DataConfig(root="real"), tmp))
    assert spec["source"] == "look-alike" and spec["root"] == str((tmp / "real").resolve())
    assert "not the published ones (MD5s differ)" in spec["note"]
    assert synthetic_mark(spec, vocab.TEST_ACCURACY.key, {vocab.TEST_ACCURACY.key: 0.98}) == " (look-alike)"


@pytest.mark.skipif(not HAVE_MNIST, reason=f"real MNIST not found under {MNIST_ROOT} (set BENCH_TEST_MNIST_ROOT)")
def test_the_published_mnist_is_real(tmp: Path):
    assert resolve_mnist(absolute_paths(DataConfig(root=str(MNIST_ROOT)), tmp))["source"] == "real"


def test_a_corrupt_synthetic_cache_is_made_again(tmp: Path):
    """A cache cut short (a disk that filled, a killed run) used to fail every later run inside its guests."""
    cfg = DataConfig(root="absent", cache_dir="cache", synthetic_train=40, synthetic_test=20)
    spec = resolve_mnist(absolute_paths(cfg, tmp))
    images = Path(spec["root"]) / "MNIST/raw/train-images-idx3-ubyte"
    whole = images.read_bytes()
    images.write_bytes(whole[:100])
    assert resolve_mnist(absolute_paths(cfg, tmp)) == spec and images.read_bytes() == whole


def test_resolve_falls_back_to_synthetic_and_says_so(tmp: Path):
    given = DataConfig(root="absent", cache_dir="cache", synthetic_train=40, synthetic_test=20)
    spec = resolve_mnist(absolute_paths(given, tmp))
    assert spec["source"] == "synthetic" and "cache" in spec["root"]
    assert (Path(spec["root"]) / "MNIST/raw/t10k-images-idx3-ubyte").exists()


def test_resolve_missing_and_incomplete_data_are_clear_errors(tmp: Path):
    with pytest.raises(DataError, match="MNIST not found"):
        resolve_mnist(absolute_paths(DataConfig(root="absent", synthetic=False), tmp))
    synthesize_mnist(tmp / "partial", 20, 20)
    (tmp / "partial/MNIST/raw/t10k-labels-idx1-ubyte").unlink()
    with pytest.raises(DataError, match="incomplete: missing t10k-labels-idx1-ubyte"):
        resolve_mnist(absolute_paths(DataConfig(root="partial"), tmp))


@pytest.mark.parametrize("case,expected", [
    ("labels-out-of-range", "label(s) out of range 0..9 (largest 77)"),
    ("fewer-images-than-labels", "250 t10k images but 500 labels"),
    ("images-not-28x28", "images are 14x28, not 28x28"),
])
def test_mnist_whose_images_and_labels_disagree_is_refused_before_any_guest(tmp: Path, case: str, expected: str):
    """Such files passed every IDX check and were scored: labels of 77 gave 40.25 % accuracy, status ok."""
    synthesize_mnist(tmp, 500, 500)
    raw = tmp / "MNIST" / "raw"
    if case == "labels-out-of-range":
        labels = np.zeros(500, dtype=np.uint8)
        labels[::2] = 77
        write_idx(raw / "t10k-labels-idx1-ubyte", labels)
    elif case == "fewer-images-than-labels":
        write_idx(raw / "t10k-images-idx3-ubyte", np.zeros((250, 28, 28), dtype=np.uint8))
    else:
        write_idx(raw / "t10k-images-idx3-ubyte", np.zeros((500, 14, 28), dtype=np.uint8))
    with pytest.raises(DataError, match=expected.replace("(", r"\(").replace(")", r"\)")):
        resolve_mnist(absolute_paths(DataConfig(root=str(tmp)), tmp))


@pytest.mark.timeout(30)  # reading a FIFO used to block the runner forever
@pytest.mark.parametrize("kind", ["a FIFO", "a directory"])
def test_data_file_that_is_not_a_regular_file_is_refused_at_once(tmp: Path, kind: str):
    import os

    synthesize_mnist(tmp, 20, 20)
    target = tmp / "MNIST" / "raw" / "t10k-labels-idx1-ubyte"
    target.unlink()
    os.mkfifo(target) if kind == "a FIFO" else target.mkdir()
    with pytest.raises(DataError, match=f"MNIST file {target} is {kind}, not a regular file"):
        resolve_mnist(absolute_paths(DataConfig(root=str(tmp)), tmp))


@pytest.mark.parametrize("path,kind", [("/dev/zero", "a character device"), ("/tmp", "a directory")])
def test_apitrace_trace_that_is_not_a_regular_file_says_what_it_is(path: str, kind: str):
    from suites.workloads.graphics.apitrace import info
    from suites.workloads.graphics.frametrace import TraceFormatError

    with pytest.raises(TraceFormatError, match=f"apitrace trace {path} is {kind}, not a regular file"):
        info(Path(path))
