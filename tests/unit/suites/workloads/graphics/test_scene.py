"""Tests of ``suites/workloads/graphics/scene.py``."""

from __future__ import annotations

import numpy as np
import pytest

from suites.workloads.graphics import renderer, scene, viewsets


@pytest.mark.parametrize("size", ["small", "medium"])
def test_scene_meets_its_triangle_budget(size: str):
    target = scene.SIZES[size][0]
    for vs in viewsets.VIEWSETS.values():
        tris = sum(m.triangles for m in scene.meshes(scene.parts(vs.generator, vs.seed), target))
        assert 0.8 * target <= tris <= 1.05 * target, (vs.name, tris)


# --- framebuffer cap and missing EGL: recorded failures, not crashes ---------------------------------
def test_memory_need_counts_buffers_textures_and_targets():
    mesh = scene.Mesh(np.zeros((1024 * 1024 // 24, 6), np.float32), np.zeros(0, np.uint32))
    need = renderer.memory_need([mesh] * 4, True, (1024, 1024), 4, 1024)
    assert need.buffers_MiB == pytest.approx(4, rel=1e-3)
    assert need.textures_MiB == pytest.approx(16 / 3)
    assert need.targets_MiB == pytest.approx(1024 * 1024 * (4 * 8 + 4) / 2**20)
