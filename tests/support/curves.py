"""Consolidation curves with a known shape: steps of tiles whose medians and spreads are chosen."""

from __future__ import annotations

from suites.capacity.curve import GuestCount, Tile


def step(n: int, cad: list[float], ml: list[float], p95: list[float],
         failed: dict[int, tuple[str, ...]] | None = None) -> GuestCount:
    return GuestCount(n, tuple(Tile({"cad_slowdown_pct": c, "ml_slowdown_pct": m, "cad_p95_frame_ms": f},
                              (failed or {}).get(i, ()))
                         for i, (c, m, f) in enumerate(zip(cad, ml, p95, strict=True))))


def knee_curve() -> list[GuestCount]:
    """Flat to 4 guests per GPU, then steep: the CAD slowdown's median 4.9 % at 5 (within 5 %, its upper bound
    over it), 8 % from 6."""
    cad = {1: 1.2, 2: 1.4, 3: 1.6, 4: 1.8, 5: 4.9, 6: 8.0, 7: 11.0}
    out = []
    for n, c in cad.items():
        spread = 0.5 if n == 5 else 0.2
        out.append(step(n, [c - spread, c, c + spread], [2.0 * n - 0.2, 2.0 * n, 2.0 * n + 0.2],
                        [20.0 + n - 0.2, 20.0 + n, 20.0 + n + 0.2]))
    return out
