"""Reference frames with one frame changed, for the pixel-mismatch tests."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from suites.workloads.graphics import frame_checks as checks


def golden_with_a_wrong_frame(tmp_path: Path) -> tuple[Path, str]:
    """The shipped references, but frame 7 of product/shaded expects another picture: (folder, that frame's key)."""
    gold = tmp_path / "golden"
    shutil.copytree(checks.GOLDEN_DIR, gold)
    table = json.loads((gold / "checksums.json").read_text())
    key = "product/small/320x240/ms1/shaded#7"
    for digests in table.values():
        digests[key] = "0" * 32
    (gold / "checksums.json").write_text(json.dumps(table))
    png = checks.reference_png(gold, key)  # and a reference image of another frame
    shutil.copy(checks.reference_png(gold, "product/small/320x240/ms1/shaded#0"), png)
    return gold, key
