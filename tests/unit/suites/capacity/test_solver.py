"""Tests of ``suites/capacity/solver.py``."""

from __future__ import annotations

import math

import pytest

from suites.capacity import curve, solver
from suites.capacity.curve import GuestCount, Limit
from tests.support.curves import knee_curve, step

LIMITS = [Limit("cad_slowdown_pct", 5.0), Limit("ml_slowdown_pct", 15.0), Limit("cad_p95_frame_ms", 50.0)]


def sparse_curve() -> list[GuestCount]:
    """Measured at 1, 2, 4 and 8 CAD guests per GPU: the ML slowdown 2, 5, 10 then 30 % (limit 15 %), so between 4
    and 8 the medians' line meets the limit at 5 (15 %); the upper bounds' line (about 11 to 31 %) is over it by 5."""
    ml = {1: 2.0, 2: 5.0, 4: 10.0, 8: 30.0}
    return [step(n, [1.0] * 3, [m - 0.5, m, m + 0.5], [20.0] * 3) for n, m in ml.items()]


def candidate(profile: str, fb: int, per_gpu: int, cap: curve.Capacity | None, vcpus: int = 2,
              memory: int = 8192) -> solver.Candidate:
    return solver.Candidate(profile, "L40S", fb, per_gpu, vcpus, memory, cap)


HOST = solver.Host(gpus=4, cores=64, memory_MiB=1024 * 1024, cpu_overcommit=2.0)


DEMAND = solver.Demand(cad_peak_MiB=1500, ml_peak_MiB=5000, reserve_MiB=256)


def candidates() -> list[solver.Candidate]:
    steps = lambda n_ok: [step(n, [1.0 if n <= n_ok else 9.0] * 3, [2.0] * 3, [20.0] * 3)  # noqa: E731
                          for n in range(1, n_ok + 3)]
    return [candidate("l40s-2q", 2048, 24, curve.capacity(steps(6), LIMITS)),
            candidate("l40s-6q", 6144, 8, curve.capacity(steps(7), LIMITS)),
            candidate("l40s-8q", 8192, 6, curve.capacity(steps(9), LIMITS)),
            candidate("l40s-12q", 12288, 4, None)]


def test_a_count_between_measured_steps_is_predicted_labelled_and_never_taken_for_measured():
    cap = curve.capacity(sparse_curve(), LIMITS)
    assert (cap.n_point, cap.n_safe) == (4, 4) and cap.measured == [1, 2, 4, 8]
    assert cap.predicted == (5, None)  # no count between 4 and 8 has its interpolated upper bounds within 15 %
    assert cap.gpu_time[0] == 5  # the solver's GPU time: the predicted count where there is one
    dense = curve.capacity(knee_curve(), LIMITS)
    assert dense.predicted == (None, None)  # every count measured: nothing to predict
    failed = sparse_curve()
    failed[3] = step(8, [1.0] * 3, [30.0] * 3, [20.0] * 3, failed={0: ("g5",)})
    assert curve.capacity(failed, LIMITS).predicted[0] is None  # a failed tile is no end to interpolate to
    host = solver.Host(gpus=4, cores=None, memory_MiB=None)
    sized = solver.solve([candidate("l40s-2q", 2048, 24, cap)], solver.Mix(cad=20, ml=2),
                         solver.Demand(math.nan, math.nan), host)
    (s,) = sized.sized
    assert s.per_gpu == (5, 4) and s.predicted == (True, False) and s.gpus == (4, 5)  # ceil(20 / 5), ceil(20 / 4)
    assert any(r.startswith("GPU time: 5 (point) predicted: interpolated between the measured counts 4 and 8")
               for r in s.reasons), s.reasons
    from suites.sizing.report import span

    assert span(s.per_gpu, predicted=s.predicted) == "4..5 (predicted)"


def test_a_profile_too_small_for_the_ml_guest_is_no_candidate_and_says_why():
    answer = solver.solve(candidates(), solver.Mix(cad=20, ml=2), DEMAND, HOST)
    assert answer.excluded == ["l40s-2q: ml needs 5,000 MiB > l40s-2q's framebuffer 2,048 MiB less its reserve 256 MiB"]


@pytest.mark.parametrize("mix, profile, per_gpu, gpus, hosts", [
    (solver.Mix(cad=20, ml=2), "l40s-6q", (7, 7), (3, 3), (1, 1)),  # GPU time binds at 7 beside the ML guest
    (solver.Mix(cad=40, ml=0), "l40s-6q", (7, 7), (6, 6), (2, 2)),
    (solver.Mix(cad=3, ml=6), "l40s-6q", (7, 7), (6, 6), (2, 2)),  # one ML guest per GPU: 6 GPUs whatever the CAD
])
def test_three_fixed_mixes_get_their_profile_gpus_and_hosts(mix, profile, per_gpu, gpus, hosts):
    answer = solver.solve(candidates(), mix, DEMAND, HOST)
    assert answer.error == "" and answer.recommended is not None
    r = answer.recommended
    assert (r.profile, r.per_gpu, r.gpus, r.hosts) == (profile, per_gpu, gpus, hosts)


def test_a_framebuffer_bound_profile_names_framebuffer():
    answer = solver.solve(candidates(), solver.Mix(cad=20, ml=2), DEMAND, HOST)
    eight = next(s for s in answer.sized if s.profile == "l40s-8q")
    assert eight.binding == (solver.FRAMEBUFFER, solver.FRAMEBUFFER) and eight.per_gpu == (5, 5)
    assert eight.reasons[0] == "framebuffer: 6 x 8,192 MiB fit one L40S (one of them the ML guest's)"
    twelve = next(s for s in answer.sized if s.profile == "l40s-12q")
    assert "GPU time: not measured for l40s-12q" in twelve.reasons[1]
    assert twelve.binding[0] == "GPU time not measured" and twelve.gpus == (None, None)  # never given as measured


def test_the_host_binds_where_its_cores_run_out():
    small = solver.Host(gpus=4, cores=16, memory_MiB=1024 * 1024)
    answer = solver.solve(candidates(), solver.Mix(cad=20, ml=2), DEMAND, small)
    measured = [s for s in answer.sized if s.profile != "l40s-12q"]
    assert all(s.binding == (solver.HOST_CPU, solver.HOST_CPU) for s in measured)
    assert answer.recommended.per_gpu == (1, 1) and answer.recommended.gpus == (20, 20)


def test_the_cost_per_user_is_gpus_times_price_plus_each_users_licence_over_users():
    prices = solver.Prices(gpu=8000.0, licence_per_year=450.0, years=4)
    assert solver.cost_per_user(3, 22, prices) == pytest.approx((3 * 8000 + 22 * 450 * 4) / 22)
    assert solver.cost_per_user(3, 22, solver.Prices()) is None and solver.cost_per_user(None, 22, prices) is None
    answer = solver.solve(candidates(), solver.Mix(cad=20, ml=2), DEMAND, HOST, spare=1, prices=prices)
    assert answer.recommended.gpus == (4, 4)  # N+1
    assert answer.recommended.cost[0] == pytest.approx((4 * 8000 + 22 * 450 * 4) / 22)


def test_a_mix_no_profile_can_serve_is_one_line():
    huge = solver.Demand(cad_peak_MiB=1500, ml_peak_MiB=13000, reserve_MiB=256)
    answer = solver.solve(candidates(), solver.Mix(cad=20, ml=2), huge, HOST)
    assert answer.recommended is None and answer.error == (
        "ml needs 13,000 MiB > the largest profile's framebuffer on L40S (l40s-12q): 12,288 MiB less its reserve "
        "256 MiB")


def test_a_profile_that_fits_one_guest_per_gpu_puts_the_ml_guests_on_gpus_of_their_own():
    """M60-8Q (one per GPU): no CAD guest fits beside an ML guest, so the ML users get GPUs of their own."""
    cap = curve.capacity([step(1, [1.0] * 3, [2.0] * 3, [20.0] * 3)], LIMITS)
    eight = solver.Candidate("m60-8q", "Tesla M60", 8192, 1, 2, 8192, cap)
    answer = solver.solve([eight], solver.Mix(cad=20, ml=2), DEMAND, HOST)
    r = answer.recommended
    assert r is not None and r.per_gpu == (1, 1) and r.gpus == (22, 22)  # 2 ML GPUs + 20 CAD GPUs
    assert r.reasons[0] == ("layout: the ML guests on GPUs of their own (no CAD guest fits beside one on m60-8q: "
                            "1 per GPU)")


def test_a_host_not_described_limits_nothing_and_says_so():
    answer = solver.solve(candidates(), solver.Mix(cad=20, ml=2), DEMAND, solver.Host(4, None, None))
    six = next(s for s in answer.sized if s.profile == "l40s-6q")
    assert set(six.limits) == {solver.FRAMEBUFFER, solver.GPU_TIME}
    assert "host CPU: not a limit (the host is not described: sizing.host)" in six.reasons


def test_when_no_measured_profile_serves_the_line_names_what_binds_each():
    nothing = curve.capacity([step(1, [9.0] * 3, [2.0] * 3, [20.0] * 3)], LIMITS)  # 1 guest already misses
    answer = solver.solve([candidate("l40s-6q", 6144, 8, nothing), candidate("l40s-12q", 12288, 4, None)],
                          solver.Mix(cad=20, ml=2), DEMAND, HOST)
    assert answer.recommended is None
    assert answer.error == ("no measured profile serves the mix: l40s-6q: GPU time allows 0 CAD guest(s) per GPU "
                            "(point ends at 1 guest(s): cad_slowdown_pct 9.0 > 5)")


def test_a_candidate_measured_on_noise_gives_no_answer_and_no_count():
    """A busy host's curve (which here would allow 6 per GPU) is inconclusive: no GPUs, no 0, the answer says why
    and what to do; the same curve clean gives its count."""
    cap = curve.capacity([step(n, [1.0 if n <= 6 else 9.0] * 3, [2.0] * 3, [20.0] * 3) for n in range(1, 9)], LIMITS)
    why = "inconclusive: host busy in 9 of 9 phase(s); to size: stop what else runs on this host and size again"
    noisy = solver.Candidate("l40s-6q", "L40S", 6144, 8, 2, 8192, cap, inconclusive=why)
    answer = solver.solve([noisy], solver.Mix(cad=20, ml=2), DEMAND, HOST)
    assert answer.recommended is None and answer.inconclusive == why and answer.error == why
    (s,) = answer.sized
    assert s.gpus == (None, None) and s.binding == ("inconclusive", "inconclusive")
    assert s.reasons[1] == f"GPU time: {why}"
    clean = solver.solve([candidate("l40s-6q", 6144, 8, cap)], solver.Mix(cad=20, ml=2), DEMAND, HOST)
    assert clean.recommended is not None and clean.recommended.per_gpu == (6, 6) and not clean.inconclusive
