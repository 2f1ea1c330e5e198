"""CIFAR-10 files: checksum before unpickling, a restricted unpickler, and real training on them."""

import pickle
from pathlib import Path

import numpy as np
import pytest

from suites.data import cifar
from suites.data.config import DataConfig
from suites.errors import DataError
from suites.workloads.base import GuestContext, StepMeter
from suites.workloads.cifar10_torch import Cifar10Torch, Cifar10TorchConfig


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
    assert cifar.resolve(DataConfig(root=str(tiny)), tmp_path)["source"] == "synthetic"
    spec = cifar.resolve(DataConfig(root="absent", cache_dir="c", synthetic_train=50, synthetic_test=20), tmp_path)
    assert spec["source"] == "synthetic" and (Path(spec["root"]) / cifar.FOLDER / cifar.MANIFEST).exists()
    with pytest.raises(DataError, match="CIFAR-10 not found"):
        cifar.resolve(DataConfig(root="absent", synthetic=False), tmp_path)


def test_files_claiming_to_be_real_must_match_the_published_md5(tmp_path: Path):
    folder = cifar.synthesize(tmp_path, 50, 20) / cifar.FOLDER
    (folder / cifar.MANIFEST).unlink()  # now they pose as the real dataset
    with pytest.raises(DataError, match="does not match the published CIFAR-10"):
        cifar.resolve(DataConfig(root=str(tmp_path)), tmp_path)
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


def train(tiny: Path, **overrides) -> tuple[Cifar10Torch, dict]:
    cfg = Cifar10TorchConfig(width=8, epochs=3, batch_size=100, lr=0.02, warmup_steps=3, **overrides)
    ctx = GuestContext("g0", [0, 1], [], None, {"root": str(tiny)}, seed=0)
    wl = Cifar10Torch(cfg, ctx)
    wl.prepare()
    meter = StepMeter(cfg.warmup_steps, wl.total_steps())
    meter.start()
    wl.train(meter)
    return wl, {**meter.finish(), **wl.evaluate()}


def test_cifar10_torch_learns_the_synthetic_classes(tiny: Path):
    wl, m = train(tiny)
    assert m["steps"] == 30 and m["images"] == 3000
    assert m["test_accuracy"] > 0.5  # ten classes: chance is 0.1
    assert m["images_per_sec"] > 0 and m["images_per_sec.jitter_mad"] >= 0
    assert wl.ctx.info["precision"] == "fp32" and wl.ctx.info["framebuffer_cap"] == "not applied (no GPU)"


def test_augmentation_crops_and_flips_per_image(tiny: Path):
    import torch

    wl = Cifar10Torch(Cifar10TorchConfig(width=4), GuestContext("g", [0], [], None, {"root": str(tiny)}, 0))
    x = torch.arange(2 * 3 * 32 * 32, dtype=torch.float32).view(2, 3, 32, 32)
    out = wl.augment(x, torch.Generator().manual_seed(0))
    assert out.shape == x.shape and not torch.equal(out, x)
    # every output row is a contiguous (possibly mirrored) run of a padded input row
    assert torch.all((out[:, :, :, 1:] - out[:, :, :, :-1]).abs().amax(dim=(2, 3)) <= 2)


def test_time_to_accuracy_stops_training_once_the_target_is_met(tiny: Path):
    _, m = train(tiny, target_accuracy=0.3)  # three epochs reach ~99%: the 30 % mark comes earlier
    assert m["steps"] in (10, 20) and m["test_accuracy"] >= 0.3  # stopped at an epoch boundary
    assert 0 < m["time_to_accuracy_s"] <= m["train_time_s"] + 1e-6
    _, never = train(tiny)
    assert "time_to_accuracy_s" not in never and never["steps"] == 30
