"""data.download: real MNIST / CIFAR-10 fetched from a mirror into the cache, verified, all or nothing.

The mirror is a real HTTP server on 127.0.0.1 serving files made here: the real MNIST files (gzipped, as the
public mirror serves them) where ../shared/data has them, and corrupted or look-alike ones always.
"""

from __future__ import annotations

import gzip
import http.server
import io
import pickle
import tarfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from suites.config.paths import absolute_paths
from suites.data import cifar, mnist
from suites.data.options import DataConfig
from suites.errors import DataError

from .helpers import HAVE_MNIST, MNIST_ROOT, SMOKE, free_port, run_bench


class Mirror:
    """A folder served over HTTP on a free loopback port; ``stall_s`` makes every answer wait that long."""

    def __init__(self, folder: Path, stall_s: float = 0.0) -> None:
        stall = stall_s

        class Handler(http.server.SimpleHTTPRequestHandler):
            def __init__(self, *args, **kwargs) -> None:
                super().__init__(*args, directory=str(folder), **kwargs)

            def do_GET(self) -> None:  # noqa: N802 (http.server's name)
                time.sleep(stall)
                super().do_GET()

            def log_message(self, *args) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/"
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def mirror_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "mirror"
    folder.mkdir()
    return folder


@pytest.fixture
def serve(mirror_dir: Path) -> Iterator:
    started: list[Mirror] = []

    def start(stall_s: float = 0.0) -> Mirror:
        started.append(Mirror(mirror_dir, stall_s))
        return started[-1]

    yield start
    for m in started:
        m.close()


def cfg_for(tmp: Path, url: str, mode: str = "auto", timeout_s: float = 30.0) -> DataConfig:
    return DataConfig(root=str(tmp / "nothing-here"), download=mode, download_timeout_s=timeout_s, mnist_url=url,
                      cifar10_url=url, cache_dir=str(tmp / "cache"), synthetic_train=100, synthetic_test=20)


def gz_mnist(source: Path, mirror: Path, corrupt: str | None = None) -> None:
    """The four IDX files of ``source`` gzipped into the mirror; ``corrupt``: that file gets one byte changed."""
    for name in mnist.MNIST_FILES:
        data = bytearray((source / name).read_bytes())
        if name == corrupt:
            data[-1] ^= 0xFF
        (mirror / f"{name}.gz").write_bytes(gzip.compress(bytes(data), compresslevel=1, mtime=0))


def nothing_cached(tmp: Path, cache: str = "cache") -> bool:
    downloaded = tmp / cache / "downloaded"
    return not downloaded.exists() or not any(p for p in downloaded.rglob("*") if p.is_file())


@pytest.mark.skipif(not HAVE_MNIST, reason=f"real MNIST not found under {MNIST_ROOT} (set BENCH_TEST_MNIST_ROOT)")
@pytest.mark.e2e  # trains, renders or waits for real (seconds)
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


@pytest.mark.e2e  # trains, renders or waits for real (seconds)
def test_a_stalled_mirror_is_given_up_within_the_timeout(tmp_path: Path, mirror_dir: Path, serve):
    (mirror_dir / "train-images-idx3-ubyte.gz").write_bytes(b"")
    m = serve(stall_s=20)
    t0 = time.monotonic()
    spec = mnist.resolve_mnist(absolute_paths(cfg_for(tmp_path, m.url, timeout_s=1.0), tmp_path))
    assert time.monotonic() - t0 < 10
    assert spec["source"] == "synthetic" and "download failed" in spec["note"]
    assert nothing_cached(tmp_path)


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


@pytest.mark.parametrize("bad", ["maybe", "2"])
def test_download_mode_is_checked(bad: str):
    with pytest.raises(Exception, match="data.download"):
        DataConfig(download=bad).check()


@pytest.mark.e2e
def test_bench_with_download_true_and_no_mirror_is_one_error_line(tmp_path: Path):

    url = f"http://127.0.0.1:{free_port()}/"
    run = run_bench(tmp_path, *SMOKE, "data.download=true", f"data.mnist_url={url}")
    assert run.proc.returncode == 2, run.proc.stderr[-2000:]
    lines = run.proc.stderr.strip().splitlines()
    assert lines[-1].startswith("error:") and "data.download=true" in lines[-1] and url in lines[-1], lines
    assert not run.run_dir.exists() and nothing_cached(tmp_path, "data")
