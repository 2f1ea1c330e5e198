"""data.download: real MNIST / CIFAR-10 fetched from a mirror into the cache, verified, all or nothing.

The mirror is a real HTTP server on 127.0.0.1 serving files made here: the real MNIST files (gzipped, as the
public mirror serves them) where ../shared/data has them, and corrupted or look-alike ones always.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from suites.config.paths import absolute_paths
from suites.data import mnist
from tests.support.helpers import HAVE_MNIST, MNIST_ROOT, SMOKE, free_port, run_bench
from tests.support.mirror import cfg_for, gz_mnist, nothing_cached


@pytest.mark.skipif(not HAVE_MNIST, reason=f"real MNIST not found under {MNIST_ROOT} (set BENCH_TEST_MNIST_ROOT)")
def test_real_mnist_is_fetched_verified_cached_and_reused_offline(tmp_path: Path, mirror_dir: Path, serve):
    gz_mnist(MNIST_ROOT / "MNIST" / "raw", mirror_dir)
    m = serve()
    spec = mnist.resolve_mnist(absolute_paths(cfg_for(tmp_path, m.url), tmp_path))
    assert spec["source"] == "real" and "downloaded" in spec["note"]
    raw = Path(spec["root"]) / "MNIST" / "raw"
    assert raw == tmp_path / "cache" / "downloaded" / "MNIST" / "raw"
    assert sorted(p.name for p in raw.iterdir()) == sorted(mnist.MNIST_FILES)  # no archives or partial folders
    assert not list(raw.parent.parent.glob(".*partial"))
    x, y = mnist.load_numpy(str(raw.parent.parent), train=True)
    assert x.shape == (60000, 28, 28) and len(y) == 60000
    m.close()  # the mirror is gone: the cached copy is used, no network touched
    again = mnist.resolve_mnist(absolute_paths(cfg_for(tmp_path, "http://127.0.0.1:9/", mode="true"), tmp_path))
    assert again["source"] == "real" and again["root"] == spec["root"]


def test_a_stalled_mirror_is_given_up_within_the_timeout(tmp_path: Path, mirror_dir: Path, serve):
    (mirror_dir / "train-images-idx3-ubyte.gz").write_bytes(b"")
    m = serve(stall_s=20)
    t0 = time.monotonic()
    spec = mnist.resolve_mnist(absolute_paths(cfg_for(tmp_path, m.url, timeout_s=1.0), tmp_path))
    assert time.monotonic() - t0 < 10
    assert spec["source"] == "synthetic" and "download failed" in spec["note"]
    assert nothing_cached(tmp_path)


def test_bench_with_download_true_and_no_mirror_is_one_error_line(tmp_path: Path):

    url = f"http://127.0.0.1:{free_port()}/"
    run = run_bench(tmp_path, *SMOKE, "data.download=true", f"data.mnist_url={url}")
    assert run.proc.returncode == 2, run.proc.stderr[-2000:]
    lines = run.proc.stderr.strip().splitlines()
    assert lines[-1].startswith("error:") and "data.download=true" in lines[-1] and url in lines[-1], lines
    assert not run.run_dir.exists() and nothing_cached(tmp_path, "data")
