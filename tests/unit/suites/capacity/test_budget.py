"""Tests of ``suites/capacity/budget.py``: a sizing trimmed to its budget in the stated order, each trim said."""

from __future__ import annotations

from suites.capacity.budget import Sweep, cpu_share, doubling, fit, sweep_s


def sweeps(profiles: list[str], policies: list[str], deepest: int = 6) -> list[Sweep]:
    return [Sweep(p, pol, tuple(range(1, deepest + 1))) for p in profiles for pol in policies]


def test_a_sweep_is_ml_alone_cad_alone_and_each_step_repeated():
    assert sweep_s(Sweep("a", "timeslice", (1, 2, 3)), 3, 10.0, lambda k: 1.0) == 3 * 10.0 * 5
    two_cores = cpu_share(2)  # k CAD guests + the ML guest on 2 cores
    assert [two_cores(k) for k in (1, 2, 3)] == [1.0, 1.5, 2.0]


def test_what_fits_is_left_alone():
    fitted = fit(sweeps(["a"], ["timeslice"]), 3, 10_000, 10.0)
    assert fitted.fits and fitted.trims == [] and fitted.repeats == 3


def test_trims_come_in_order_steps_repeats_policies_candidates_until_it_fits():
    many = sweeps(["a", "b", "c", "d"], ["timeslice", "mps"])  # 4 x 2 x (2 + 6) phases x 3 repeats x 10 s = 1920 s
    steps_only = fit(many, 3, 1500, 10.0)  # the doubling counts (1, 2, 4, 6): 4 x 2 x 6 x 3 x 10 = 1440 s
    assert steps_only.fits and len(steps_only.trims) == 1 and steps_only.trims[0].startswith("counts: the doubling")
    assert steps_only.sweeps[0].counts == (1, 2, 4, 6) == doubling(tuple(range(1, 7)))
    to_repeats = fit(many, 3, 1000, 10.0)  # 960 s at 2 repeats
    assert to_repeats.repeats == 2 and [t.split(":")[0] for t in to_repeats.trims] == ["counts", "repeats"]
    to_policies = fit(many, 3, 500, 10.0)  # 480 s: timeslice only
    assert {s.policy for s in to_policies.sweeps} == {"timeslice"} and to_policies.trims[2].startswith("policies")
    to_candidates = fit(many, 3, 250, 10.0)  # 240 s: two candidates, the last of the list dropped first
    assert [s.profile for s in to_candidates.sweeps] == ["a", "b"] and to_candidates.fits
    assert to_candidates.trims[3] == "candidates: c, d not measured"


def test_repeats_never_go_below_two_and_a_budget_one_candidate_at_one_count_exceeds_is_left_unfitted():
    fitted = fit(sweeps(["a", "b"], ["timeslice"]), 3, 10, 10.0)
    assert fitted.repeats == 2 and [s.profile for s in fitted.sweeps] == ["a"] and not fitted.fits
    assert fitted.sweeps[0].counts == (1,) and fitted.estimate_s == 2 * 10.0 * 3  # ML, CAD, one count: still over
    assert fitted.trims[-1] == "counts: a [1] (deeper counts not measured: past the budget)"
    assert not any("all the same" in t for t in fitted.trims)  # never measured past its budget (the command refuses)


def test_the_last_trim_drops_the_deepest_counts_until_it_fits():
    fitted = fit(sweeps(["a"], ["timeslice"], deepest=4), 2, 90, 10.0)  # (1, 2, 4): 2 x 10 x 5 = 100 s; (1, 2): 80
    assert fitted.fits and fitted.sweeps[0].counts == (1, 2) and fitted.estimate_s == 80
    assert fitted.trims == ["counts: the doubling counts a [1, 2, 4] (between them: interpolated, (predicted))",
                            "counts: a [1, 2] (deeper counts not measured: past the budget)"]


def test_each_cad_user_type_costs_its_own_phase_seconds():
    """A heavy user's viewsets replay 336 frames, a light user's 96: one figure for both under-counted the heavy."""
    light, heavy = Sweep("a", "timeslice", (1, 2), "light"), Sweep("a", "timeslice", (1, 2), "heavy")
    costs = {"light": 10.0, "heavy": 30.0}
    assert sweep_s(light, 2, costs, lambda k: 1.0) == 2 * 10.0 * 4 and sweep_s(heavy, 2, costs, lambda k: 1.0) == 240
    assert fit([light, heavy], 2, 1000, costs).estimate_s == 320
