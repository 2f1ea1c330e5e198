"""Tests of ``suites/bundle/archive.py``: a bundle written is one read back; a hostile one (malformed, oversized,
path-traversing, linked, off its schema) is one BundleError line, and reading it writes nothing anywhere."""

from __future__ import annotations

import copy
import io
import json
import re
import tarfile
from pathlib import Path

import pytest

from suites.bundle import BundleError, read, write
from suites.bundle.archive import MAX_BYTES, PNG_MAGIC
from suites.publish.reference import reference_document
from tests.support.bundles import png

PNG = png()


def doc() -> dict:
    return copy.deepcopy(reference_document())


def archive(path: Path, members: list[tuple[tarfile.TarInfo, bytes]]) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for info, data in members:
            info.size = len(data) if info.isreg() else 0
            tar.addfile(info, io.BytesIO(data) if info.isreg() else None)
    return path


def member(name: str, kind: bytes = tarfile.REGTYPE, link: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, link
    return info


def test_a_bundle_written_reads_back_whole(tmp_path: Path):
    path = write(doc(), {"plots/a.png": PNG}, tmp_path / "x.bundle.tar.gz")
    got = read(path)
    assert got.doc == json.loads(json.dumps(doc())) and got.plots == {"plots/a.png": PNG}
    (tmp_path / "bare.json").write_text(json.dumps(doc()))
    assert read(tmp_path / "bare.json").doc["origin"] == "published"


@pytest.mark.parametrize("name, kind, link, data, says", [
    ("../evil.png", tarfile.REGTYPE, "", PNG, "a bundle holds bundle.json and plots/<name>.png only"),
    ("/etc/evil.png", tarfile.REGTYPE, "", PNG, "a bundle holds bundle.json and plots/<name>.png only"),
    ("plots/../../x.png", tarfile.REGTYPE, "", PNG, "a bundle holds bundle.json and plots/<name>.png only"),
    ("plots/a.png", tarfile.SYMTYPE, "/etc/passwd", b"", "is not a regular file"),
    ("plots/a.png", tarfile.LNKTYPE, "bundle.json", b"", "is not a regular file"),
    ("plots", tarfile.DIRTYPE, "", b"", "is not a regular file"),
    ("plots/a.png", tarfile.REGTYPE, "", b"<svg onload=alert(1)>", "is not a whole PNG image (no PNG signature)"),
    # round 7: 63 zero-filled "PNG"s in 265 KB made the catalog write 2 GB
    ("plots/a.png", tarfile.REGTYPE, "", PNG_MAGIC + b"\x00" * 4096, "is not a whole PNG image (chunk"),
    ("plots/a.png", tarfile.REGTYPE, "", png()[:-12], "is not a whole PNG image (no IEND chunk)"),
    ("plots/a.png", tarfile.REGTYPE, "", png() + b"x", "is not a whole PNG image (bytes after its IEND chunk)"),
    ("plots/a.png", tarfile.REGTYPE, "", png(30_000, 1), "is not a whole PNG image (30000 x 1 pixels)"),
    ("bundle.json", tarfile.REGTYPE, "", json.dumps(reference_document()).encode(), "two bundle.json members"),
])
def test_an_archive_member_that_is_not_a_bundles_is_one_line_and_nothing_is_extracted(
        tmp_path: Path, name: str, kind: bytes, link: str, data: bytes, says: str):
    good = json.dumps(doc()).encode()
    path = archive(tmp_path / "bad.bundle.tar.gz", [(member("bundle.json"), good), (member(name, kind, link), data)])
    before = sorted(p.name for p in tmp_path.rglob("*"))
    with pytest.raises(BundleError, match=re.escape(says)) as err:
        read(path)
    assert "\n" not in str(err.value)
    assert sorted(p.name for p in tmp_path.rglob("*")) == before and not Path("/etc/evil.png").exists()


@pytest.mark.parametrize("text, says", [
    (b"{not json", "not JSON"),
    (b'{"format": "gpu-mixed-bench result bundle", "version": 1, "x": NaN}', "not JSON (NaN is not a JSON number"),
    (b"[" * 100_000 + b"]" * 100_000, "not JSON"),
    (b'{"format": "something else"}', "not a gpu-mixed-bench result bundle"),
    (b'{"format": "gpu-mixed-bench result bundle", "version": 99}', "bundle version '99'; this suite reads version 1"),
])
def test_a_document_that_is_not_a_bundle_is_one_line(tmp_path: Path, text: bytes, says: str):
    (tmp_path / "b.json").write_bytes(text)
    with pytest.raises(BundleError, match=says.replace("(", r"\(").replace(")", r"\)")):
        read(tmp_path / "b.json")


@pytest.mark.parametrize("edit, says", [
    (lambda d: d.update(figures="all of them"), "figures: 'all of them' is not of type 'array'"),
    (lambda d: d.update(title="x" * 5000), r"title: fails its maxLength rule \(300\)"),
    (lambda d: d.update(plots=["../../etc/passwd"]), "plots/0: '../../etc/passwd' does not match"),
    (lambda d: d.update(extra=1), "Additional properties are not allowed"),
    (lambda d: d["run"].update(kind="<script>"), "run/kind: '<script>' is not one of"),
])
def test_a_document_off_its_schema_says_where(tmp_path: Path, edit, says: str):
    d = doc()
    edit(d)
    (tmp_path / "b.json").write_text(json.dumps(d))
    with pytest.raises(BundleError, match=says):
        read(tmp_path / "b.json")


def test_an_oversized_or_crowded_bundle_is_refused_before_it_is_read(tmp_path: Path):
    big = tmp_path / "big.bundle.tar.gz"
    with big.open("wb") as f:
        f.truncate(MAX_BYTES + 1)
    with pytest.raises(BundleError, match=r"over the 32 MiB a bundle may take"):
        read(big)
    crowd = archive(tmp_path / "crowd.bundle.tar.gz",
                    [(member("bundle.json"), json.dumps(doc()).encode())] +
                    [(member(f"plots/p{i}.png"), PNG) for i in range(70)])
    with pytest.raises(BundleError, match="more than 64 members"):
        read(crowd)
    with pytest.raises(BundleError, match="not a file"):
        read(tmp_path)
    with pytest.raises(BundleError, match="No such file"):
        read(tmp_path / "none.bundle.tar.gz")
    (tmp_path / "torn.bundle.tar.gz").write_bytes(b"\x1f\x8b" + b"\x00" * 40)
    with pytest.raises(BundleError, match="not a readable bundle archive"):
        read(tmp_path / "torn.bundle.tar.gz")


def test_writing_refuses_a_plot_name_a_reader_would_refuse(tmp_path: Path):
    with pytest.raises(BundleError, match="not a plot name"):
        write(doc(), {"../x.png": PNG}, tmp_path / "x.bundle.tar.gz")
    assert not list(tmp_path.iterdir())


def test_an_interrupt_while_writing_leaves_neither_the_bundle_nor_a_part_file(tmp_path: Path, monkeypatch):
    def interrupted(self: Path, target: Path) -> Path:
        raise KeyboardInterrupt

    monkeypatch.setattr(Path, "replace", interrupted)
    with pytest.raises(KeyboardInterrupt):
        write(reference_document(), {}, tmp_path / "b.bundle.tar.gz")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("kind", [tarfile.GNUTYPE_LONGNAME, tarfile.XHDTYPE], ids=["gnu-long-name", "pax-header"])
def test_a_header_bomb_inside_the_size_cap_is_refused_at_once(tmp_path: Path, kind: bytes):
    """Round 7: a 2 MB bundle whose GNU long-name (or PAX) header says 2 GiB: check-results read it whole (38 s and
    6.3 GB of memory; the PAX one then said 'compliant'). The archive is cut where it unpacks past its cap."""
    import time
    import zlib

    size = 100 * 2**20
    header = tarfile.TarInfo("././@LongLink")
    header.type, header.size = kind, size
    gz = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    chunks = [gz.compress(header.tobuf(format=tarfile.GNU_FORMAT)[:512])]
    zeros = bytes(2**20)
    chunks += [gz.compress(zeros) for _ in range(size // len(zeros))]
    (tmp_path / "bomb.bundle.tar.gz").write_bytes(b"".join([*chunks, gz.flush()]))
    assert (tmp_path / "bomb.bundle.tar.gz").stat().st_size < MAX_BYTES
    t0 = time.monotonic()
    with pytest.raises(BundleError, match=r"over 48 MiB unpacked"):
        read(tmp_path / "bomb.bundle.tar.gz")
    assert time.monotonic() - t0 < 5  # cut at the cap, not read through (a generous bound for a loaded host)


@pytest.mark.parametrize("values, says", [
    ("[1e999, 2.0, 3.0]", "1e999 is not a finite number"),  # read as inf: the catalog dropped it, showing n=2
    ("[1e308, 1e308, 1e308]", "repeat 1e+308 is past 1e+12"),  # overflowed fsum: a traceback, the catalog aborted
])
def test_a_repeat_that_is_no_measurements_is_refused_in_one_line(tmp_path: Path, values: str, says: str):
    d = doc()
    d["figures"] = [{"name": "x", "unit": "s", "higher_is_better": False, "values": [1.0, 2.0, 3.0],
                     "summary": {"n": 3, "median": 2.0, "mean": 2.0, "low": 1.0, "high": 3.0, "level": 0.95,
                                 "method": "t"}, "validity": "enforced", "marks": []}]
    (tmp_path / "b.json").write_text(json.dumps(d).replace("[1.0, 2.0, 3.0]", values))
    with pytest.raises(BundleError, match=re.escape(says)):
        read(tmp_path / "b.json")


@pytest.mark.parametrize("mode, says", [("w:", "a plain tar archive"), ("w:bz2", "a bzip2 archive"),
                                        ("w:xz", "a xz archive")])
def test_a_tar_that_is_not_gzip_compressed_is_said_to_be_one(tmp_path: Path, mode: str, says: str):
    """Round 7: a plain or bz2 tar was 'not JSON'."""
    data = json.dumps(doc()).encode()
    with tarfile.open(tmp_path / "b.tar", mode) as tar:
        info = tarfile.TarInfo("bundle.json")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    with pytest.raises(BundleError, match=f"{says}: a bundle is a gzip-compressed tar"):
        read(tmp_path / "b.tar")


def test_a_bundle_of_thousands_of_figures_is_refused_before_it_is_read(tmp_path: Path):
    """Round 7: 5,000 figures in 344 KB took check-results 64 s and the catalog 112 s."""
    import time

    d = doc()
    fig = {"name": "x", "unit": "s", "higher_is_better": False, "values": [1.0, 2.0],
           "summary": {"n": 2, "median": 1.5, "mean": 1.5, "low": 1.0, "high": 2.0, "level": 0.95,
                       "method": "bootstrap"}, "validity": "enforced", "marks": []}
    d["figures"] = [dict(fig, name=f"f{i}") for i in range(5000)]
    (tmp_path / "b.json").write_text(json.dumps(d))
    t0 = time.monotonic()
    with pytest.raises(BundleError, match=r"figures: 5000 items, over the 500 a bundle may hold"):
        read(tmp_path / "b.json")
    assert time.monotonic() - t0 < 5  # counted, not validated item by item (a generous bound for a loaded host)
