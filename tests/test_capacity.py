"""suites/capacity: a consolidation curve read for guests per GPU with its confidence (curve.py), and a mix taken to
a profile, GPUs, hosts and a cost per user (solver.py). Synthetic curves with a known shape."""

from __future__ import annotations

import math

import pytest

from suites.capacity import curve, solver
from suites.capacity.curve import Limit, Step, Tile

LIMITS = [Limit("cad_slowdown_pct", 5.0), Limit("ml_slowdown_pct", 15.0), Limit("cad_p95_frame_ms", 50.0)]


def step(n: int, cad: list[float], ml: list[float], p95: list[float],
         failed: dict[int, tuple[str, ...]] | None = None) -> Step:
    return Step(n, tuple(Tile({"cad_slowdown_pct": c, "ml_slowdown_pct": m, "cad_p95_frame_ms": f},
                              (failed or {}).get(i, ()))
                         for i, (c, m, f) in enumerate(zip(cad, ml, p95, strict=True))))


def knee_curve() -> list[Step]:
    """Flat to 4 guests per GPU, then steep: the CAD slowdown's median 4.9 % at 5 (within 5 %, its upper bound
    over it), 8 % from 6."""
    cad = {1: 1.2, 2: 1.4, 3: 1.6, 4: 1.8, 5: 4.9, 6: 8.0, 7: 11.0}
    out = []
    for n, c in cad.items():
        spread = 0.5 if n == 5 else 0.2
        out.append(step(n, [c - spread, c, c + spread], [2.0 * n - 0.2, 2.0 * n, 2.0 * n + 0.2],
                        [20.0 + n - 0.2, 20.0 + n, 20.0 + n + 0.2]))
    return out


def test_a_curve_with_a_known_knee_gives_its_knee_and_both_capacities():
    cap = curve.capacity(knee_curve(), LIMITS)
    assert (cap.n_point, cap.n_safe, cap.knee) == (5, 4, 4)
    assert cap.measured == list(range(1, 8))
    assert cap.why_point == "6 guest(s): cad_slowdown_pct 8.0 > 5"
    assert cap.why_safe.startswith("5 guest(s): cad_slowdown_pct upper bound 6.")


def test_capacities_follow_the_limits_exactly_where_the_interval_allows():
    steps = [step(n, [n - 0.1] * 3, [1.0] * 3, [10.0] * 3) for n in range(1, 9)]  # no spread: bounds = medians
    cap = curve.capacity(steps, LIMITS)
    assert (cap.n_point, cap.n_safe) == (5, 5) and cap.why_point == "6 guest(s): cad_slowdown_pct 5.9 > 5"
    wide = [step(n, [n - 2.0, n * 1.0, n + 2.0], [1.0] * 3, [10.0] * 3) for n in range(1, 9)]
    cap = curve.capacity(wide, LIMITS)
    assert cap.n_point == 5 and cap.n_safe < 5 and "upper bound" in cap.why_safe  # the spread costs safe guests


def test_a_step_with_one_repeat_has_no_bound_and_is_not_safe():
    cap = curve.capacity([step(n, [1.0], [1.0], [10.0]) for n in (1, 2, 3)], LIMITS)
    assert (cap.n_point, cap.n_safe) == (3, 0) and "n=1, no interval" in cap.why_safe


def test_a_tile_with_a_failed_guest_fails_its_step_and_names_the_guest():
    steps = knee_curve()
    steps[2] = step(3, [1.6] * 3, [6.0] * 3, [23.0] * 3, failed={1: ("g2",)})
    cap = curve.capacity(steps, LIMITS)
    assert cap.n_point == 2 and cap.n_safe == 2
    assert cap.why_point == "3 guest(s): tile failed: g2 failed"


def test_a_held_out_step_is_predicted_from_its_neighbours_and_labelled_predicted():
    full = curve.capacity(knee_curve(), LIMITS)
    held = curve.capacity([s for s in knee_curve() if s.guests != 3], LIMITS)
    value, label = curve.predict(held.readings, 3, "cad_p95_frame_ms")
    measured, how = curve.predict(full.readings, 3, "cad_p95_frame_ms")
    assert label == curve.PREDICTED and how == curve.MEASURED
    bounds = next(r for r in full.readings if r.guests == 3)
    assert abs(value - measured) <= bounds.upper["cad_p95_frame_ms"] - measured  # within the measured step's CI
    assert math.isnan(curve.predict(held.readings, 9, "cad_p95_frame_ms")[0])  # never extrapolated
    assert curve.predict(held.readings, 9, "cad_p95_frame_ms")[1] == \
        "not measured: 9 is outside the measured steps (1..7)"


def sparse_curve() -> list[Step]:
    """Measured at 1, 2, 4 and 8 CAD guests per GPU: the ML slowdown 2, 5, 10 then 30 % (limit 15 %), so between 4
    and 8 the medians' line meets the limit at 5 (15 %); the upper bounds' line (about 11 to 31 %) is over it by 5."""
    ml = {1: 2.0, 2: 5.0, 4: 10.0, 8: 30.0}
    return [step(n, [1.0] * 3, [m - 0.5, m, m + 0.5], [20.0] * 3) for n, m in ml.items()]


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
    assert any(r.startswith("GPU time: 5 (point) predicted: interpolated between the measured steps 4 and 8")
               for r in s.reasons), s.reasons
    from suites.render.sizing_report import span

    assert span(s.per_gpu, predicted=s.predicted) == "4..5 (predicted)"


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
    """M60-8Q (one per GPU): no CAD guest fits beside an ML guest, so the ML jobs get GPUs of their own."""
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
    assert answer.error == "no measured profile serves the mix: l40s-6q: GPU time allows 0 CAD guest(s) per GPU"


# --- a fleet's nodes as candidates (suites/capacity/fleet_candidates.py) ----------------------------------------------
def node(i: int, gpu: str, **more: object) -> dict:
    return {"node_id": f"n{i}", "host": f"vm-{i}", "ip": f"10.0.0.{i}", "driver": "535.183.06",
            "gpus": [{"name": gpu, "virtualization_mode": "vgpu-guest", **more}]}


def test_a_fleet_measures_each_profile_as_deep_as_its_nodes_allow_and_says_why_not_further():
    from suites.capacity import fleet_candidates
    from suites.capacity.measured import candidate_profiles

    fleet = [node(1, "GRID M60-4Q"), node(2, "GRID M60-8Q"), node(3, "GRID M60-4Q"), node(4, "GRID M60-4Q")]
    plan = fleet_candidates.plan(candidate_profiles("Tesla M60", []), fleet, {}, max_guests=4)
    assert plan.steps == {"m60-4q": 2}  # three nodes: two CAD guests beside the ML guest, one node each
    assert "m60-4q: measured to 2 CAD guest(s) per GPU: the fleet has 3 node(s) of it (vm-1, vm-3, vm-4)" in \
        plan.notes[1]
    assert plan.notes[0] == ("m60-8q: not measured: the fleet has 1 node of it (vm-2); a step needs 2 (a CAD guest "
                             "and the ML guest, one node each)")
    assert "m60-2q: not measured: no node of the fleet is one" in plan.notes
    assert fleet_candidates.plan(candidate_profiles("Tesla M60", []), fleet, {}, max_guests=1).steps == {"m60-4q": 1}
    said = plan.provenance
    assert said["fleet"] == ("4 node(s): vm-1: GRID M60-4Q, vm-2: GRID M60-8Q, vm-3: GRID M60-4Q, "
                             "vm-4: GRID M60-4Q")
    assert said["GPU"] == "GRID M60-4Q + GRID M60-8Q" and said["driver"] == "535.183.06" and "NVML" not in said
    assert said["vGPU scheduler"].startswith("not exposed in the VM") and said["GPU groups"].startswith("not stated")


def test_a_fleet_says_the_scheduler_its_nodes_report_the_groups_stated_and_a_replayed_nvml():
    from suites.capacity import fleet_candidates

    fleet = [node(1, "GRID M60-2Q", vgpu_scheduler="fixed-share"), {**node(2, "GRID M60-2Q", vgpu_scheduler=None),
                                                                     "nvml_trace": "traces/m60-2q.json"}]
    said = fleet_candidates.provenance(fleet, {"gpu0": ["vm-1", "10.0.0.2"]})
    assert said["vGPU scheduler"] == "fixed-share (1 node(s))"
    assert said["fleet"] == ("2 node(s): vm-1: GRID M60-2Q (physical GPU gpu0, stated), vm-2: GRID M60-2Q "
                             "(physical GPU gpu0, stated)") and said["GPU groups"] == "gpu0: vm-1, 10.0.0.2"
    assert said["NVML"] == "replayed from recorded traces on 1 node(s) (traces/m60-2q.json): no GPU measured"
    assert fleet_candidates.replayed(fleet) == ["vm-2"]
