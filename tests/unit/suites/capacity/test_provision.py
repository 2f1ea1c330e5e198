"""Tests of ``suites/capacity/provision.py``: the VM to provision, where the ML users run, the licence edition, the
cost per user and what would change the answer."""

from __future__ import annotations

from suites.capacity import curve, provision, solver
from suites.capacity.curve import Limit
from tests.support.curves import step

LIMITS = [Limit("cad_slowdown_pct", 5.0), Limit("ml_slowdown_pct", 15.0), Limit("cad_p95_frame_ms", 50.0)]


def test_the_edition_follows_the_vgpu_types_series():
    assert provision.edition("m60-2q") == "NVIDIA RTX Virtual Workstation (vWS)"
    assert provision.edition("h100-20c") == "NVIDIA AI Enterprise (C-series: compute)"
    assert provision.edition("h200-mig-1-18c").endswith("a MIG slice: no graphics (vWS) type on it")
    assert provision.edition("passthrough-1gpu") == "no vGPU edition (not a vGPU type)"


def test_the_provisioning_lines_name_the_vm_gpus_hosts_ml_placement_edition_and_the_next_threshold():
    cap = curve.capacity([step(n, [1.0 if n <= 3 else 9.0] * 3, [2.0] * 3, [20.0] * 3) for n in range(1, 6)], LIMITS)
    c = solver.Candidate("m60-1q", "Tesla M60", 1024, 8, 2, 4096, cap)
    mix = solver.Mix(cad=20, ml=2)
    answer = solver.solve([c], mix, solver.Demand(float("nan"), float("nan")), solver.Host(4, None, None), 1,
                          solver.Prices(4000.0, 450.0, 3.0))
    r = answer.recommended
    assert r is not None and r.per_gpu == (3, 3) and r.gpus == (8, 8)  # ceil(20 / 3) = 7, + 1 spare
    lines = provision.lines(r, c, mix, 1, 4)  # cost: (8 x 4000 + 22 x 450 x 3) / 22 users
    assert lines[0] == ("provision: m60-1q VMs of 2 vCPU(s), 4,096 MiB RAM and a 1,024 MiB vGPU each (up to 12 CAD "
                        "VM(s) a host); 8 GPU(s) in 2 host(s) of 4 GPU(s) (1 spare); cost per user 2,805")
    assert lines[1].startswith("ML users: the 2 ML user(s) beside the CAD users, one per GPU")
    assert lines[2] == "licence: NVIDIA RTX Virtual Workstation (vWS), one per concurrent CAD user"
    assert lines[3] == ("what would change it: GPU time binds (3 CAD guest(s) per GPU: safe ends at 4 guest(s): "
                        "cad_slowdown_pct 9.0 > 5); 8 GPU(s) hold 21 CAD user(s): user 22 needs GPU 9")


def test_ml_users_on_gpus_of_their_own_say_why():
    cap = curve.capacity([step(1, [1.0] * 3, [2.0] * 3, [20.0] * 3)], LIMITS)
    c = solver.Candidate("m60-8q", "Tesla M60", 8192, 1, 4, 16384, cap)
    mix = solver.Mix(cad=4, ml=2)
    r = solver.solve([c], mix, solver.Demand(float("nan"), float("nan")), solver.Host(4, None, None)).recommended
    assert r is not None and not r.ml_shared
    lines = provision.lines(r, c, mix, 0, 4)
    assert lines[1] == ("ML users: the 2 ML user(s) on GPUs of their own (m60-8q: 1 VM(s) per GPU leaves no slot "
                        "beside a CAD user)")
    assert lines[3].endswith("6 GPU(s) hold 4 CAD user(s): user 5 needs GPU 7")
