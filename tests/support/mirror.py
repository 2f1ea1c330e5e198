"""A local HTTP mirror of the datasets' download servers (``serve``, ``mirror_dir``): the real downloader against
files that are right, corrupt, truncated or missing, with nothing fetched from the network."""

from __future__ import annotations

import gzip
import http.server
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from suites.data import mnist
from suites.data.options import DataConfig


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


def cfg_for(tmp_path: Path, url: str, mode: str = "auto", timeout_s: float = 30.0) -> DataConfig:
    return DataConfig(root=str(tmp_path / "nothing-here"), download=mode, download_timeout_s=timeout_s, mnist_url=url,
                      cifar10_url=url, cache_dir=str(tmp_path / "cache"), synthetic_train=100, synthetic_test=20)


def gz_mnist(source: Path, mirror: Path, corrupt: str | None = None) -> None:
    """The four IDX files of ``source`` gzipped into the mirror; ``corrupt``: that file gets one byte changed."""
    for name in mnist.MNIST_FILES:
        data = bytearray((source / name).read_bytes())
        if name == corrupt:
            data[-1] ^= 0xFF
        (mirror / f"{name}.gz").write_bytes(gzip.compress(bytes(data), compresslevel=1, mtime=0))


def nothing_cached(tmp_path: Path, cache: str = "cache") -> bool:
    downloaded = tmp_path / cache / "downloaded"
    return not downloaded.exists() or not any(p for p in downloaded.rglob("*") if p.is_file())
