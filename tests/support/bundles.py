"""Runs as make publish reads them, built by hand (a comparison's figures, a set-up with local paths and
credentials in it), for the bundle and publish tests."""

from __future__ import annotations

from suites.compare.results import Figure, RunFigures
from suites.record.store_reader import StoredRun

SETUP = {"host.hostname": "lab-node-7.corp.example", "host.gpu_names": "NVIDIA H200", "host.gpu_count": "1",
         "host.git_sha": "0123456789abcdef0123456789abcdef01234567", "lib.torch": "2.14.1", "scale": "full",
         "tracking_uri": "https://alice:s3cret@mlflow.corp.example", "data.root": "/home/alice/data",
         "artifact_dir": "/home/alice/art", "profile.name": "m60-8q", "profile.gpu_access": "vgpu",
         "note": "see /home/alice/notes.txt", "workload.step_ms": "5", "scenario.study.cad.workload": "old"}


def comparison(values: dict[str, list[float]], validity: str = "emulated") -> RunFigures:
    run = StoredRun("a" * 32, "1", "gpu-vs-cpu-run", "FINISHED", 1_790_000_000_000, {}, dict(SETUP), {})
    rf = RunFigures(run, "comparison", dict(SETUP), scenarios=3)
    for name, v in values.items():
        rf.figures[name] = Figure(name, "s" if name.endswith(" s") else "images/s", not name.endswith(" s"), v,
                                  [], validity)
    return rf


def png(width: int = 2, height: int = 2) -> bytes:
    """A whole PNG of ``width`` x ``height`` grey pixels, made by hand (signature, IHDR, IDAT, IEND with their CRCs):
    what a bundle's plot must be (suites/bundle/archive.py reads each chunk)."""
    import struct
    import zlib

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    rows = b"".join(b"\x00" + b"\x80" * width for _ in range(height))  # filter byte 0, then 8-bit grey
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))
