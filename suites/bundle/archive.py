"""A bundle written and read: ``bundle.json`` and its plots in one ``.tar.gz``, or the bare ``bundle.json``.

Reading treats the file as hostile: its size, its size unpacked (a gzip bomb is cut at ``MAX_UNPACKED``, before
tarfile reads a header: a 2 GiB GNU long name or PAX header in a 2 MB file took 38 s and 6 GB), its members (one
``bundle.json`` and regular files named ``plots/<name>.png``, each a whole PNG, nothing else: no link, device, folder
or ``../``), each member's size, the document's JSON (a number that is no finite number, ``1e999``, refused) and its
schema are checked before a figure is read, and nothing is ever extracted to disk (members are read into memory).
Every refusal is one :class:`BundleError` line naming what is wrong.
"""

from __future__ import annotations

import functools
import io
import json
import math
import re
import struct
import tarfile
import time
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["FORMAT", "LEFT_OUT", "MAX_BYTES", "VERSION", "Bundle", "BundleError", "read", "write"]

FORMAT, VERSION = "gpu-mixed-bench result bundle", 1
LEFT_OUT = "(left out: a local path, store or host name)"  # a set-up value a bundle does not carry
DOCUMENT = "bundle.json"
SCHEMA = Path(__file__).with_name("schema.json")
MAX_BYTES = 32 * 2**20  # a whole bundle: a study's figures and a dozen plots are well under 2 MiB
MAX_DOCUMENT = 8 * 2**20
MAX_PLOT = 4 * 2**20
MAX_MEMBERS = 64
MAX_UNPACKED = 48 * 2**20  # the archive's tar stream: its members and their headers
MAX_PIXELS = 20_000  # a plot's width and height each
MAX_FIGURE = 1e12  # a repeat no measurement reaches (images/s, seconds, frames/s, ms): past it, a bomb for the stats
PLOT = re.compile(r"^plots/[A-Za-z0-9][A-Za-z0-9._-]{0,80}\.png$")
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


class BundleError(ValueError):
    """A bundle that cannot be read as one: its one line says why."""


@dataclass
class Bundle:
    doc: dict[str, Any]
    plots: dict[str, bytes] = field(default_factory=dict)  # "plots/<name>.png" -> its bytes
    source: str = ""  # the file it was read from

    @property
    def title(self) -> str:
        return str(self.doc.get("title", ""))


def write(doc: dict[str, Any], plots: dict[str, bytes], path: Path) -> Path:
    """``doc`` and ``plots`` as one archive at ``path`` (checked as a reader will check it: a bundle this suite
    writes is always one it reads)."""
    data = dumps(doc)
    check_document(json.loads(data), DOCUMENT)
    check_figures(doc, DOCUMENT)
    path.parent.mkdir(parents=True, exist_ok=True)
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, payload in [(DOCUMENT, data), *sorted(plots.items())]:
            if name != DOCUMENT and not PLOT.match(name):
                raise BundleError(f"{name}: not a plot name a bundle may hold (plots/<name>.png)")
            info = tarfile.TarInfo(name)
            info.size, info.mtime, info.mode = len(payload), int(time.time()), 0o644
            tar.addfile(info, io.BytesIO(payload))
    unpacked_bytes = len(data) + sum(len(b) + 1024 for b in plots.values())  # a member's header and padding: 1 KiB
    if buf.tell() > MAX_BYTES or unpacked_bytes > MAX_UNPACKED:
        raise BundleError(f"{path.name}: {buf.tell() / 2**20:.1f} MiB ({unpacked_bytes / 2**20:.1f} MiB unpacked), "
                          f"over the {MAX_BYTES // 2**20} MiB ({MAX_UNPACKED // 2**20} MiB unpacked) a bundle may "
                          "take: fewer plots")
    tmp = path.with_name(path.name + ".part")
    try:
        tmp.write_bytes(buf.getvalue())
        tmp.replace(path)  # never a half-written bundle under its name
    except BaseException:  # a full disk, an interrupt: no half-written file beside it either
        tmp.unlink(missing_ok=True)
        raise
    return path


def dumps(doc: dict[str, Any]) -> bytes:
    """The document as JSON: a number that is no number (NaN, inf) is written null."""
    return (json.dumps(finite(doc), indent=1, sort_keys=False, allow_nan=False) + "\n").encode()


def finite(obj: Any) -> Any:
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, dict):
        return {str(k): finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [finite(v) for v in obj]
    return obj


def read(path: Path | str) -> Bundle:
    """The bundle at ``path`` (an archive or a bare bundle.json; a command line's word as given), checked; else one
    BundleError line."""
    if isinstance(path, str) and not path.strip():  # `make check-results BUNDLE=`: Path("") would be the folder "."
        raise BundleError("BUNDLE is empty: give a .bundle.tar.gz or a bundle.json")
    path = Path(path)
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise BundleError(f"{path}: {exc.strerror or exc}") from None
    if not path.is_file():
        raise BundleError(f"{path}: not a file (a bundle is a .bundle.tar.gz or a bundle.json)")
    if size > MAX_BYTES:
        raise BundleError(f"{path}: {size / 2**20:.1f} MiB, over the {MAX_BYTES // 2**20} MiB a bundle may take")
    raw = path.read_bytes()
    other = "bzip2" if raw[:3] == b"BZh" else "xz" if raw[:6] == b"\xfd7zXZ\x00" else \
        "plain tar" if raw[257:262] == b"ustar" else ""
    if other:  # said as what it is (round 7: "not JSON")
        raise BundleError(f"{path}: a {other} archive: a bundle is a gzip-compressed tar (.bundle.tar.gz) or a bare "
                          "bundle.json")
    if raw[:2] != b"\x1f\x8b":  # not gzip: a bare document
        return Bundle(parse(raw, str(path)), {}, str(path))
    doc, plots = members(unpacked(raw, path), path)
    return Bundle(doc, plots, str(path))


def unpacked(raw: bytes, path: Path) -> bytes:
    """The gzip stream's tar, at most MAX_UNPACKED bytes of it (a bomb is refused at that, in well under a second)."""
    gz = zlib.decompressobj(16 + zlib.MAX_WBITS)
    try:
        out = gz.decompress(raw, MAX_UNPACKED + 1)
    except zlib.error as exc:
        raise BundleError(f"{path}: not a readable bundle archive (gzip: {str(exc)[:100]})") from None
    if len(out) > MAX_UNPACKED:
        raise BundleError(f"{path}: over {MAX_UNPACKED // 2**20} MiB unpacked (a bundle's plots and document are a "
                          "few MiB): not read")
    return out


def members(tar_bytes: bytes, path: Path) -> tuple[dict[str, Any], dict[str, bytes]]:
    doc: dict[str, Any] | None = None
    plots: dict[str, bytes] = {}
    try:
        with tarfile.open(fileobj=io.BytesIO(tar_bytes), mode="r:") as tar:
            for count, m in enumerate(iter(tar.next, None), 1):
                if count > MAX_MEMBERS:
                    raise BundleError(f"{path}: more than {MAX_MEMBERS} members")
                payload = member(tar, m, path)
                if m.name == DOCUMENT and doc is not None:
                    raise BundleError(f"{path}: two {DOCUMENT} members: which one is the bundle is not said")
                if m.name == DOCUMENT:
                    doc = parse(payload, f"{path}: {DOCUMENT}")
                elif m.name in plots:
                    raise BundleError(f"{path}: two members named {m.name!r}")
                else:
                    plots[m.name] = payload
    except (tarfile.TarError, EOFError, OSError, ValueError) as exc:
        if isinstance(exc, BundleError):
            raise
        raise BundleError(f"{path}: not a readable bundle archive ({str(exc).splitlines()[0][:120]})") from None
    if doc is None:
        raise BundleError(f"{path}: no {DOCUMENT} in it")
    return doc, plots


def member(tar: tarfile.TarFile, m: tarfile.TarInfo, path: Path) -> bytes:
    """One member's bytes, if it is what a bundle may hold."""
    shown = ascii(m.name)[1:-1][:100]
    if not m.isreg():
        raise BundleError(f"{path}: member {shown!r} is not a regular file (a link, folder or device)")
    if m.name != DOCUMENT and not PLOT.match(m.name):
        raise BundleError(f"{path}: member {shown!r}: a bundle holds {DOCUMENT} and plots/<name>.png only")
    cap = MAX_DOCUMENT if m.name == DOCUMENT else MAX_PLOT
    if m.size > cap:
        raise BundleError(f"{path}: member {shown!r} is {m.size / 2**20:.1f} MiB, over its {cap // 2**20} MiB")
    f = tar.extractfile(m)
    payload = f.read(cap + 1) if f is not None else b""
    if len(payload) > cap:
        raise BundleError(f"{path}: member {shown!r} is larger than it says")
    if m.name != DOCUMENT:
        why = png_problem(payload)
        if why:
            raise BundleError(f"{path}: member {shown!r} is not a whole PNG image ({why})")
    return payload


def png_problem(data: bytes) -> str:
    """'' where ``data`` is a whole PNG (its chunks' lengths and CRCs, IHDR first with a sane size, IEND last),
    else what is wrong: a file of zeros behind the magic is no plot."""
    if not data.startswith(PNG_MAGIC):
        return "no PNG signature"
    at, first, last = len(PNG_MAGIC), True, b""
    while at + 12 <= len(data):
        (length,), chunk_type = struct.unpack(">I", data[at:at + 4]), data[at + 4:at + 8]
        end = at + 12 + length
        if end > len(data) or struct.unpack(">I", data[end - 4:end])[0] != zlib.crc32(data[at + 4:end - 4]):
            return f"chunk {ascii(chunk_type)[2:-1]!s} at byte {at}: cut short or its CRC wrong"
        if first and (chunk_type != b"IHDR" or length != 13):
            return "its first chunk is not IHDR"
        if first:
            width, height = struct.unpack(">II", data[at + 8:at + 16])
            if not (0 < width <= MAX_PIXELS and 0 < height <= MAX_PIXELS):
                return f"{width} x {height} pixels"
        first, last, at = False, chunk_type, end
        if chunk_type == b"IEND":
            return "" if at == len(data) else "bytes after its IEND chunk"
    return "no IEND chunk" if last != b"IEND" else ""


def parse(raw: bytes, where: str) -> dict[str, Any]:
    """The document's JSON, on its schema."""
    if len(raw) > MAX_DOCUMENT:
        raise BundleError(f"{where}: {len(raw) / 2**20:.1f} MiB, over the {MAX_DOCUMENT // 2**20} MiB a document "
                          "may take")
    try:
        doc = json.loads(raw.decode("utf-8"), parse_constant=refuse_constant, parse_float=finite_float)
    except (ValueError, RecursionError) as exc:
        raise BundleError(f"{where}: not JSON ({str(exc).splitlines()[0][:120]})") from None
    check_document(doc, where)
    check_figures(doc, where)
    return doc


def refuse_constant(name: str) -> None:
    raise ValueError(f"{name} is not a JSON number")


def finite_float(text: str) -> float:
    """A JSON number as a float; one past a float's range (``1e999``, read as inf) is no number: refused, never a
    repeat the statistics drop in silence."""
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text[:40]} is not a finite number")
    return value


def check_figures(doc: dict[str, Any], where: str) -> None:
    """Each figure's repeats within what a measurement reaches: [1e308, 1e308, 1e308] on schema overflowed the
    interval's sums (a traceback, and the whole catalog aborted)."""
    for f in doc["figures"]:
        wild = [v for v in f["values"] if abs(v) > MAX_FIGURE]
        if wild:
            raise BundleError(f"{where}: figure {ascii(f['name'])[1:-1][:80]!r}: repeat {wild[0]:g} is past "
                              f"{MAX_FIGURE:g}, no measurement's figure")


@functools.cache
def validator() -> Any:
    from jsonschema import Draft202012Validator

    schema = json.loads(SCHEMA.read_text())
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


def check_document(doc: object, where: str) -> None:
    """``doc`` on the bundle schema (its format and version first, so an older or foreign file says so)."""
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise BundleError(f"{where}: not a {FORMAT} (its \"format\" is not {FORMAT!r})")
    if doc.get("version") != VERSION:
        raise BundleError(f"{where}: bundle version {str(doc.get('version'))[:20]!r}; this suite reads version "
                          f"{VERSION}")
    from jsonschema.exceptions import best_match

    for key in ("figures", "ratios"):  # the schema's own caps, counted before it validates every item (5,000 took 2 s)
        cap = validator().schema["properties"][key]["maxItems"]
        if isinstance(doc.get(key), list) and len(doc[key]) > cap:
            raise BundleError(f"{where}: {key}: {len(doc[key])} items, over the {cap} a bundle may hold")
    error = best_match(validator().iter_errors(doc))
    if error is not None:
        at = "/".join(str(p) for p in error.absolute_path) or "(the document)"
        said = error.message.splitlines()[0]  # it quotes the value: a long one is said by its rule instead
        said = said if len(said) <= 160 else f"fails its {error.validator} rule ({str(error.validator_value)[:60]})"
        raise BundleError(f"{where}: {at[:120]}: {said}")
