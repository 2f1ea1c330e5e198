"""Tests of ``suites/data/dataset.py``: a data file that is not a plain file is one line before anything reads it;
each image rolled by its own shift in one gather; the numpy frameworks' normalised split."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from suites.data.dataset import Dataset, require_regular_file, roll_each, write_whole
from suites.errors import DataError


def test_a_data_file_that_is_not_a_plain_file_is_one_line(tmp_path: Path):
    (tmp_path / "ok").write_bytes(b"x")
    require_regular_file(tmp_path / "ok", "MNIST file")
    with pytest.raises(DataError, match=r"MNIST file .*missing does not exist"):
        require_regular_file(tmp_path / "missing", "MNIST file")
    with pytest.raises(DataError, match="is a directory, not a regular file"):
        require_regular_file(tmp_path, "MNIST file")
    os.mkfifo(tmp_path / "fifo")  # reading it would block forever
    with pytest.raises(DataError, match="is a FIFO, not a regular file"):
        require_regular_file(tmp_path / "fifo", "MNIST file")


def test_each_image_is_rolled_by_its_own_shift_as_np_roll_would():
    rng = np.random.default_rng(0)
    images = rng.integers(0, 255, (5, 6, 7, 3), dtype=np.uint8)
    shifts = rng.integers(-3, 4, (5, 2))
    want = np.stack([np.roll(images[i], tuple(shifts[i]), axis=(0, 1)) for i in range(5)])
    assert np.array_equal(roll_each(images, shifts), want)


def test_a_greyscale_split_is_normalised_per_channel_for_the_numpy_frameworks():
    x = np.full((2, 4, 4), 255, np.uint8)
    ds = Dataset("d", lambda cfg, seed: {}, lambda root, train: (x, np.array([1, 2], np.uint8)), (0.5,), (0.25,))
    images, labels = ds.load_normalised("root", True)
    assert images.shape == (2, 4, 4, 1) and images.dtype == np.float32 and np.allclose(images, 2.0)
    assert labels.dtype == np.int64 and labels.tolist() == [1, 2]


@pytest.mark.parametrize("fault", [KeyboardInterrupt(), OSError(28, "No space left on device")])
def test_a_cache_file_whose_write_fails_is_as_it_was_with_no_half_file_beside_it(tmp_path: Path, monkeypatch, fault):
    (tmp_path / "train-images").write_bytes(b"before")

    def failed(src: object, dst: object) -> None:
        raise fault

    monkeypatch.setattr(os, "replace", failed)
    with pytest.raises(type(fault)):
        write_whole(tmp_path / "train-images", b"after")
    assert [p.name for p in tmp_path.iterdir()] == ["train-images"]
    assert (tmp_path / "train-images").read_bytes() == b"before"
