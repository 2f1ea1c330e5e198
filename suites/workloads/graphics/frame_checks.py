"""Correctness of rendered frames: exact md5 per renderer, tolerance diff across renderers.

As in Mesa's trace CI, a checksum is only comparable with one taken by the
same renderer (GL_RENDERER and GL_VERSION, which for llvmpipe include the
LLVM version and SIMD width), so ``golden/checksums.json`` keeps one table per
renderer. Across renderers rasterisation legitimately differs by a few edge
pixels, so the check there is an image diff against the reference PNGs
(default ``small`` size only): the share of pixels that differ by more than a
few levels must stay under a tolerance. A mismatch is reported, never dropped.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from gpu_probe.shapes import JsonObject

GOLDEN_DIR = Path(__file__).resolve().parent / "golden"
LEVELS = 24  # per-channel difference (of 255) that counts a pixel as different across renderers


def frame_key(viewset: str, size: str, resolution: tuple[int, int], samples: int, test: str, frame: int) -> str:
    return f"{viewset}/{size}/{resolution[0]}x{resolution[1]}/ms{samples}/{test}#{frame}"


def md5(pixels: bytes) -> str:
    return hashlib.md5(pixels).hexdigest()


def to_image(pixels: bytes, resolution: tuple[int, int]) -> np.ndarray:
    """GL rows are bottom-up; images are top-down."""
    w, h = resolution
    return np.frombuffer(pixels, np.uint8).reshape(h, w, 3)[::-1]


def reference_png(golden_dir: Path, key: str) -> Path:
    return golden_dir / (key.replace("/", "_").replace("#", "_f") + ".png")


def diff_pct(image: np.ndarray, reference: np.ndarray) -> float:
    """Share of pixels (%) whose largest channel difference exceeds LEVELS."""
    if image.shape != reference.shape:
        return 100.0
    delta = np.abs(image.astype(np.int16) - reference.astype(np.int16)).max(axis=-1)
    return float((delta > LEVELS).mean() * 100.0)


@dataclass
class Verdict:
    key: str
    status: str  # match | mismatch | within-tolerance | beyond-tolerance | no-reference
    md5: str
    diff_pct: float | None = None

    @property
    def ok(self) -> bool:
        return self.status in ("match", "within-tolerance", "no-reference")


class Goldens:
    """Reference checksums (per renderer) and images (renderer-independent) of chosen frames."""

    def __init__(self, golden_dir: str | Path | None = None, tolerance_pct: float = 1.0) -> None:
        self.dir = Path(golden_dir or GOLDEN_DIR)
        self.tolerance_pct = tolerance_pct
        path = self.dir / "checksums.json"
        self.table: dict[str, dict[str, str]] = json.loads(path.read_text()) if path.exists() else {}

    def verify(self, renderer: str, key: str, pixels: bytes, resolution: tuple[int, int]) -> Verdict:
        digest = md5(pixels)
        known = self.table.get(renderer, {}).get(key)
        if known is not None:
            return Verdict(key, "match" if known == digest else "mismatch", digest, None if known == digest else
                           self._diff(key, pixels, resolution))
        pct = self._diff(key, pixels, resolution)
        if pct is None:
            return Verdict(key, "no-reference", digest)
        return Verdict(key, "within-tolerance" if pct <= self.tolerance_pct else "beyond-tolerance", digest, pct)

    def _diff(self, key: str, pixels: bytes, resolution: tuple[int, int]) -> float | None:
        png = reference_png(self.dir, key)
        if not png.exists():
            return None
        import matplotlib.image

        ref = (matplotlib.image.imread(png)[..., :3] * 255).round().astype(np.uint8)
        return diff_pct(to_image(pixels, resolution), ref)

    def record(self, renderer: str, key: str, pixels: bytes, resolution: tuple[int, int], image: bool) -> None:
        self.table.setdefault(renderer, {})[key] = md5(pixels)
        if image:
            import matplotlib.image

            self.dir.mkdir(parents=True, exist_ok=True)
            matplotlib.image.imsave(reference_png(self.dir, key), to_image(pixels, resolution))

    def save(self) -> Path:
        path = self.dir / "checksums.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        tables = {r: dict(sorted(t.items())) for r, t in sorted(self.table.items())}
        path.write_text(json.dumps(tables, indent=1) + "\n")
        return path


def summarize_verdicts(verdicts: list[Verdict]) -> JsonObject:
    bad = [v for v in verdicts if not v.ok]
    worst = max((v.diff_pct for v in verdicts if v.diff_pct is not None), default=None)
    return {"checked": len(verdicts), "failed": [f"{v.key}: {v.status}" + (f" ({v.diff_pct:.2f} % pixels differ)"
                                                                           if v.diff_pct is not None else "")
                                                 for v in bad],
            "statuses": sorted({v.status for v in verdicts}), "worst_diff_pct": worst}
