"""Procedural CAD-like scenes: assemblies of meshed parts, deterministic from a seed.

Every part is a superquadric (rounded boxes, cylinders, spheres) or a
supertoroid (rings, gaskets): one parametric grid covers the shapes CAD
viewsets are made of, and its tessellation sets the triangle count exactly.
The part list (shape, placement, material) depends only on the generator and
seed, so frame traces can refer to parts by index; the size preset changes
only the tessellation, i.e. triangles, never which parts exist.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

# size preset -> (triangles per scene, default resolution, texture edge)
SIZES: dict[str, tuple[int, tuple[int, int], int]] = {
    "small": (40_000, (320, 240), 256),
    "medium": (1_000_000, (1280, 720), 1024),
    "large": (5_000_000, (1920, 1080), 2048),
}


@dataclass(frozen=True)
class Solid:
    """One solid of a CAD model (a CAD "part"; named apart from a campaign's parts)."""

    shape: str  # "quadric" or "toroid"
    scale: tuple[float, float, float]  # semi-axes; for a toroid (R, R, r)
    exponents: tuple[float, float]  # (e1, e2): 1,1 round; ->0 boxy
    position: tuple[float, float, float]
    yaw_deg: float
    color: tuple[float, float, float, float]  # RGBA; alpha < 1 = drawn in the transparent pass
    textured: bool = False
    weight: float = 1.0  # share of the scene's triangle budget
    explode: tuple[float, float, float] = (0.0, 0.0, 0.0)  # offset at explode = 1

    @property
    def transparent(self) -> bool:
        return self.color[3] < 1.0


@dataclass
class Mesh:
    vertices: np.ndarray  # (n, 6) float32: position, normal
    indices: np.ndarray  # (m,) uint32, triangles

    @property
    def triangles(self) -> int:
        return len(self.indices) // 3

    @property
    def nbytes(self) -> int:
        return int(self.vertices.nbytes + self.indices.nbytes)


def _spow(x: np.ndarray, e: float) -> np.ndarray:
    return np.sign(x) * np.abs(x) ** e


def _grid_indices(nv: int, nu: int) -> np.ndarray:
    i, j = np.meshgrid(np.arange(nv - 1), np.arange(nu - 1), indexing="ij")
    a = (i * nu + j).ravel()
    b, c, d = a + nu, a + nu + 1, a + 1
    return np.stack([a, b, c, a, c, d], axis=1).ravel().astype(np.uint32)


def tessellate(part: Solid, triangles: int) -> Mesh:
    """The part as a (nv x nu) parametric grid with about ``triangles`` triangles, in part space."""
    nv = max(4, int(np.sqrt(max(triangles, 32) / 4.0)) + 1)
    nu = 2 * nv
    e1, e2 = part.exponents
    a, b, c = part.scale
    if part.shape == "toroid":
        v = np.linspace(-np.pi, np.pi, nv)[:, None]
    else:
        v = np.linspace(-np.pi / 2, np.pi / 2, nv)[:, None]
    u = np.linspace(-np.pi, np.pi, nu)[None, :]
    cv, sv, cu, su = _spow(np.cos(v), e1), _spow(np.sin(v), e1), _spow(np.cos(u), e2), _spow(np.sin(u), e2)
    if part.shape == "toroid":
        ring = a + c * cv
        pos = np.stack(np.broadcast_arrays(ring * cu, ring * su * (b / a), c * sv), axis=-1)
    else:
        pos = np.stack(np.broadcast_arrays(a * cv * cu, b * cv * su, c * sv), axis=-1)
    du, dv = np.gradient(pos, axis=1), np.gradient(pos, axis=0)
    normal = np.cross(du, dv)
    length = np.linalg.norm(normal, axis=-1, keepdims=True)
    fallback = pos / np.maximum(np.linalg.norm(pos, axis=-1, keepdims=True), 1e-9)  # poles: the grid collapses
    normal = np.where(length > 1e-9, normal / np.maximum(length, 1e-12), fallback)
    if part.shape != "toroid":
        normal = -normal  # this (v, u) orientation winds the quadric's normals inwards
    verts = np.concatenate([pos, normal], axis=-1).reshape(-1, 6).astype(np.float32)
    return Mesh(verts, _grid_indices(nv, nu))


def model_matrix(part: Solid, explode: float = 0.0) -> np.ndarray:
    """Part space -> world (column vectors, 4x4 float32)."""
    t = np.radians(part.yaw_deg)
    m = np.eye(4, dtype=np.float32)
    m[:2, :2] = [[np.cos(t), -np.sin(t)], [np.sin(t), np.cos(t)]]
    m[:3, 3] = np.asarray(part.position) + explode * np.asarray(part.explode)
    return m


# --- generators: one per viewset family -------------------------------------------------
def _mechanical(rng: np.random.Generator) -> list[Solid]:
    """A gearbox: base plate, transparent housing, shafts, rings, a field of bolts."""
    steel = (0.62, 0.64, 0.68, 1.0)
    parts = [Solid("quadric", (2.2, 1.2, 0.08), (0.1, 0.1), (0, 0, -0.1), 0, (0.35, 0.38, 0.42, 1.0), weight=4),
             Solid("quadric", (2.0, 1.0, 0.7), (0.25, 0.25), (0, 0, 0.65), 0, (0.55, 0.7, 0.85, 0.35), weight=8,
                  explode=(0, 0, 1.6))]
    for k in range(6):  # vertical shafts in two rows, each carrying two gears
        x, y = -1.2 + 1.2 * (k % 3), (-0.45, 0.45)[k // 3]
        parts.append(Solid("quadric", (0.06, 0.06, 0.6), (0.1, 1.0), (x, y, 0.6), 0, steel, weight=2,
                          explode=(0, 0, 0.5)))
    for k in range(12):
        x, y = -1.2 + 1.2 * (k % 6 % 3), (-0.45, 0.45)[k % 6 // 3]
        z, r = (0.35, 0.8)[k // 6], float(rng.uniform(0.2, 0.4))
        parts.append(Solid("toroid", (r, r, 0.06), (0.3, 1.0), (x, y, z), float(rng.uniform(0, 90)),
                          (0.8, 0.55 + 0.2 * rng.random(), 0.2, 1.0), weight=3, explode=(0, 0, 0.4 + 0.6 * (k // 6))))
    for k in range(100):  # bolts around the base
        x, y = -2.0 + 4.0 * (k % 25) / 24, -1.1 if k < 50 else 1.1
        h = float(rng.uniform(0.08, 0.16))
        parts.append(Solid("quadric", (0.04, 0.04, h), (0.1, 0.4), (x, y if k % 50 < 25 else -y * 0.95, h), 0,
                          (0.3, 0.3, 0.32, 1.0), weight=0.3, explode=(0, 0, 0.8 + 0.4 * rng.random())))
    return parts


def _architecture(rng: np.random.Generator) -> list[Solid]:
    """A four-storey frame: textured slabs, columns and walls, glass panes."""
    concrete = (0.78, 0.76, 0.72, 1.0)
    parts: list[Solid] = []
    for floor in range(4):
        z = floor * 1.2
        parts.append(Solid("quadric", (3.0, 2.0, 0.08), (0.05, 0.05), (0, 0, z), 0, concrete, True, weight=3))
        for i in range(9):
            x, y = -2.7 + 2.7 * (i % 3), -1.8 + 1.8 * (i // 3)
            parts.append(Solid("quadric", (0.12, 0.12, 0.55), (0.1, 0.1), (x, y, z + 0.6), 0, concrete, True))
        for side in (-1, 1):
            parts.append(Solid("quadric", (3.0, 0.06, 0.5), (0.05, 0.05), (0, side * 1.95, z + 0.6), 0,
                              (0.7, 0.45, 0.35, 1.0), True, weight=1.5))
            tint = float(rng.uniform(0.6, 0.8))
            parts.append(Solid("quadric", (0.04, 1.9, 0.5), (0.05, 0.05), (side * 2.95, 0, z + 0.6), 0,
                              (0.5, tint, 0.9, 0.3), weight=0.5))
    return parts


def _product(rng: np.random.Generator) -> list[Solid]:
    """A few smooth, densely tessellated parts (a consumer product): heavy draw calls."""
    parts = [Solid("quadric", (1.6, 0.9, 0.5), (0.5, 0.6), (0, 0, 0.5), 0, (0.85, 0.2, 0.15, 1.0), weight=6)]
    for k in range(4):
        x, y = (-1.0, 1.0)[k % 2], (-0.9, 0.9)[k // 2]
        parts.append(Solid("toroid", (0.3, 0.3, 0.12), (0.8, 1.0), (x, y, 0.2), 90, (0.1, 0.1, 0.1, 1.0), weight=2))
    for k in range(3):
        parts.append(Solid("quadric", (0.15, 0.15, 0.15), (1.0, 1.0), (-0.5 + 0.5 * k, 0, 1.05), 0,
                          (0.9, 0.9, float(rng.uniform(0.3, 0.9)), 1.0)))
    return parts


GENERATORS: dict[str, Callable[[np.random.Generator], list[Solid]]] = {
    "mechanical": _mechanical, "architecture": _architecture, "product": _product}


def parts(generator: str, seed: int) -> list[Solid]:
    return GENERATORS[generator](np.random.default_rng(seed))


def meshes(scene_parts: list[Solid], triangles: int) -> list[Mesh]:
    """Tessellate every part with its weighted share of the scene's triangle budget."""
    total = sum(p.weight for p in scene_parts)
    return [tessellate(p, int(triangles * p.weight / total)) for p in scene_parts]


def bounds(scene_parts: list[Solid]) -> tuple[Any, float]:
    """(centre, radius) of the assembly: what cameras orbit."""
    pos = np.array([p.position for p in scene_parts], dtype=float)
    ext = np.array([max(p.scale) for p in scene_parts], dtype=float)
    lo, hi = (pos - ext[:, None]).min(axis=0), (pos + ext[:, None]).max(axis=0)
    return (lo + hi) / 2, float(np.linalg.norm(hi - lo) / 2)
