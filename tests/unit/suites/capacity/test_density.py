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
    assert density.shown(c) == ("<= 3", "<= 15")  # one GPU beside the ML user's guest, three CAD only (4 each)
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


def test_a_profile_whose_framebuffer_cannot_hold_the_cad_guest_has_no_figure():
    """First-time administrator: heavy CAD offered on m60-0q (512 MiB) as 'framebuffer bound only <= 15' because,
    without a GPU, no peak was measured; its viewsets' stated need leaves such a profile out."""
    heavy = solver.Demand(cad_peak_MiB=700.0, ml_peak_MiB=float("nan"), reserve_MiB=0.0)
    small, big = cand("m60-0q", 16), cand("m60-1q", 8)  # 512 MiB, 1024 MiB
    short = density.cell(small, None, HOST, True, heavy)
    assert short.label == density.FB_SHORT and density.shown(short) == ("-", "-")
    assert density.cell(big, None, HOST, True, heavy).label == density.FB_ONLY
    assert density.cell(small, None, HOST, True).label == density.FB_ONLY  # no need known: as before


def test_per_host_cells_put_an_ml_guest_only_on_as_many_gpus_as_there_are_ml_users():
    """First-time administrator: per-host cells assumed an ML guest on every GPU, though 2 ML users take 2 GPUs of
    a host's 4 (the others hold CAD guests only)."""
    ok = curve_ok_to(3, (1, 2, 3, 4))
    assert density.cell(cand("m60-2q", 4), None, HOST, 2).per_host == (3 * 2 + 4 * 2,) * 2
    assert density.cell(cand("m60-2q", 4), None, HOST, 9).per_host == (3 * 4,) * 2  # more ML users than GPUs
    assert density.cell(cand("m60-2q", 4), None, HOST, 0).per_host == (4 * 4,) * 2
    assert density.cell(cand("m60-1q", 8), ok, HOST, 2).per_host == (12, 12)  # GPU time binds at 3 either way
    whole = density.cell(cand("m60-8q", 1), None, HOST, 1)  # the ML guest on a GPU of its own: 3 GPUs of CAD
    assert whole.per_gpu == (1, 1) and whole.per_host == (3, 3)
