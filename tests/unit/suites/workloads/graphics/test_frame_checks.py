"""Tests of ``suites/workloads/graphics/frame_checks.py``."""

from __future__ import annotations

import numpy as np
import pytest

from suites.workloads.graphics import frame_checks as checks


def test_reference_frames_show_the_model_not_a_blank_target():
    for png in sorted(checks.GOLDEN_DIR.glob("*.png")):
        import matplotlib.image

        img = matplotlib.image.imread(png)[..., :3]
        background = np.all(np.abs(img - img[0, 0]) < 0.02, axis=-1).mean()
        assert 0.03 < 1 - background < 0.97, f"{png.name}: {1 - background:.1%} of pixels drawn"


def test_cross_renderer_diff_tolerates_edges_but_not_another_frame():
    a = np.zeros((100, 100, 3), np.uint8)
    b = a.copy()
    b[0, :50] = 255  # half a row of edge pixels
    assert checks.diff_pct(a, b) == pytest.approx(0.5)
    b[:, :] += checks.LEVELS  # a uniform shift within the level tolerance
    b[0, :50] = 255
    assert checks.diff_pct(a, b) == pytest.approx(0.5)
    assert checks.diff_pct(a, np.zeros((50, 100, 3), np.uint8)) == 100.0
