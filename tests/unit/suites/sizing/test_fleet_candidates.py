"""Tests of ``suites/sizing/fleet_candidates.py``."""

from __future__ import annotations


# --- a fleet's nodes as candidates (suites/sizing/fleet_candidates.py) ----------------------------------------------
def node(i: int, gpu: str, **more: object) -> dict:
    return {"node_id": f"n{i}", "host": f"vm-{i}", "ip": f"10.0.0.{i}", "driver": "535.183.06",
            "gpus": [{"name": gpu, "virtualization_mode": "vgpu-guest", **more}]}


def test_a_fleet_measures_each_profile_as_deep_as_its_nodes_allow_and_says_why_not_further():
    from suites.config.profile_files import candidate_profiles
    from suites.sizing import fleet_candidates

    fleet = [node(1, "GRID M60-4Q"), node(2, "GRID M60-8Q"), node(3, "GRID M60-4Q"), node(4, "GRID M60-4Q")]
    plan = fleet_candidates.plan(candidate_profiles("Tesla M60", []), fleet, {}, max_guests=4)
    assert plan.counts == {"m60-4q": 2}  # three nodes: two CAD guests beside the ML guest, one node each
    assert "m60-4q: measured to 2 CAD guest(s) per GPU: the fleet has 3 node(s) of it (vm-1, vm-3, vm-4)" in \
        plan.notes[1]
    assert plan.notes[0] == ("m60-8q: not measured: the fleet has 1 node of it (vm-2); a count needs 2 (a CAD guest "
                             "and the ML guest, one node each)")
    assert "m60-2q: not measured: no node of the fleet is one" in plan.notes
    assert fleet_candidates.plan(candidate_profiles("Tesla M60", []), fleet, {}, max_guests=1).counts == {"m60-4q": 1}
    said = plan.provenance
    assert said["fleet"] == ("4 node(s): vm-1: GRID M60-4Q, vm-2: GRID M60-8Q, vm-3: GRID M60-4Q, "
                             "vm-4: GRID M60-4Q")
    assert said["GPU"] == "GRID M60-4Q + GRID M60-8Q" and said["driver"] == "535.183.06" and "NVML" not in said
    assert said["vGPU scheduler"].startswith("not exposed in the VM") and said["GPU groups"].startswith("not stated")


def test_a_fleet_says_the_scheduler_its_nodes_report_the_groups_stated_and_a_replayed_nvml():
    from suites.sizing import fleet_candidates

    fleet = [node(1, "GRID M60-2Q", vgpu_scheduler="fixed-share"), {**node(2, "GRID M60-2Q", vgpu_scheduler=None),
                                                                     "nvml_trace": "traces/m60-2q.json"}]
    said = fleet_candidates.provenance(fleet, {"gpu0": ["vm-1", "10.0.0.2"]})
    assert said["vGPU scheduler"] == "fixed-share (1 node(s))"
    assert said["fleet"] == ("2 node(s): vm-1: GRID M60-2Q (physical GPU gpu0, stated), vm-2: GRID M60-2Q "
                             "(physical GPU gpu0, stated)") and said["GPU groups"] == "gpu0: vm-1, 10.0.0.2"
    assert said["NVML"] == "replayed from recorded traces on 1 node(s) (traces/m60-2q.json): no GPU measured"
    assert fleet_candidates.replayed(fleet) == ["vm-2"]
