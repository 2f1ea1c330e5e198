"""Tests of ``suites/capacity/density.py``: each cell labelled measured, predicted, framebuffer bound only, not
measured or inconclusive, never a figure for what was not measured, never past a profile's VMs per GPU."""

from __future__ import annotations

from suites.capacity import curve, density, solver
from suites.capacity.curve import Limit
from tests.support.curves import step

LIMITS = [Limit("cad_slowdown_pct", 5.0), Limit("ml_slowdown_pct", 15.0), Limit("cad_p95_frame_ms", 50.0)]
HOST = solver.Host(gpus=4, cores=None, memory_MiB=None)


def cand(profile: str, per_gpu: int, inconclusive: str = "") -> solver.Candidate:
    return solver.Candidate(profile, "Tesla M60", 8192 // per_gpu, per_gpu, 2, 8192, None, inconclusive=inconclusive)


def curve_ok_to(n_ok: int, counts: tuple[int, ...]) -> curve.Capacity:
    return curve.capacity([step(n, [1.0 if n <= n_ok else 9.0] * 3, [2.0] * 3, [20.0] * 3) for n in counts], LIMITS)


def test_a_measured_curve_gives_its_count_per_gpu_and_per_host():
    c = density.cell(cand("m60-1q", 8), curve_ok_to(3, (1, 2, 3, 4)), HOST, True)
    assert (c.per_gpu, c.per_host, c.label, c.binds) == ((3, 3), (12, 12), density.MEASURED, solver.GPU_TIME)
    assert density.shown(c) == ("3", "12")


def test_a_count_between_measured_steps_is_labelled_predicted():
    sparse = curve.capacity([step(n, [1.0] * 3, [m - 0.5, m, m + 0.5], [20.0] * 3)
                             for n, m in {1: 2.0, 2: 5.0, 4: 10.0, 8: 30.0}.items()], LIMITS)
    c = density.cell(cand("m60-0q", 16), sparse, HOST, True)
    assert c.label == density.PREDICTED and c.per_gpu == (5, 4)
    assert density.shown(c) == ("4..5", "16..20")


def test_a_profile_not_measured_shows_only_its_framebuffer_bound_and_never_more_than_fits_the_card():
    c = density.cell(cand("m60-2q", 4), None, HOST, True)
    assert (c.per_gpu, c.label, c.binds) == ((3, 3), density.FB_ONLY, solver.FRAMEBUFFER)  # 4 VMs, one the ML's
    assert density.shown(c) == ("<= 3", "<= 12")
    deep = density.cell(cand("m60-2q", 4), curve_ok_to(9, tuple(range(1, 10))), HOST, True)
    assert deep.per_gpu == (3, 3) and deep.binds == solver.FRAMEBUFFER  # the curve's 9 is past the card's 3


def test_a_whole_gpu_profile_beside_ml_is_its_own_gpu_and_a_profile_with_no_room_is_not_measured():
    whole = density.cell(cand("m60-8q", 1), None, HOST, True)
    assert whole.per_gpu == (1, 1) and whole.label == density.FB_ONLY  # the ML users on GPUs of their own
    tiny = solver.Candidate("x-1q", "Tesla M60", 1024, 8, 64, 8192, None)
    crowded = solver.Host(gpus=4, cores=16, memory_MiB=None)  # 16 cores: no 64-vCPU VM per GPU
    assert density.cell(tiny, None, crowded, True).label == density.NOT_MEASURED
    assert density.shown(density.cell(tiny, None, crowded, True)) == ("-", "-")


def test_an_inconclusive_profile_has_no_figure_and_rows_cover_every_type_level_and_candidate():
    noisy = cand("m60-1q", 8, "inconclusive: host busy")
    assert density.cell(noisy, curve_ok_to(3, (1, 2, 3, 4)), HOST, True).label == density.INCONCLUSIVE
    caps = {("light", "strict"): {"m60-1q": curve_ok_to(2, (1, 2, 3))},
            ("light", "typical"): {"m60-1q": curve_ok_to(3, (1, 2, 3))}}
    rows = density.rows([cand("m60-1q", 8), cand("m60-2q", 4)], caps, HOST, True)
    assert [(t, lv, c.profile, cell.label) for t, lv, c, cell in rows] == [
        ("light", "strict", "m60-1q", "measured"), ("light", "strict", "m60-2q", "framebuffer bound only"),
        ("light", "typical", "m60-1q", "measured"), ("light", "typical", "m60-2q", "framebuffer bound only")]
    assert [cell.per_gpu for _, _, c, cell in rows if c.profile == "m60-1q"] == [(2, 2), (3, 3)]
