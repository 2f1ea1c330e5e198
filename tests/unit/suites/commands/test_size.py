"""Tests of ``suites/commands/size.py``."""

from __future__ import annotations


def test_a_stored_consolidation_is_reused_only_for_the_same_measurement():
    """The reuse key holds the user's bench overrides (another seed, vCPU count or data is another measurement) and
    leaves out where a run writes and what it prints (another store folder or cache is the same measurement)."""
    from gpu_probe.inventory import collect
    from suites.commands.size import reuse_key

    inv = collect()
    base = ["scenario=consolidation", "profile=m60-2q", "progress=quiet", "tracking_uri=sqlite:////a/m.db",
            "artifact_dir=/a/art", "data.cache_dir=/a/data"]
    key = reuse_key(inv, base, "m60-2q", "time-slice", [])
    moved = ["scenario=consolidation", "profile=m60-2q", "tracking_uri=sqlite:////b/m.db", "artifact_dir=/b/art",
             "data.cache_dir=/b/data", "wait_for_cores_s=0"]
    assert reuse_key(inv, moved, "m60-2q", "time-slice", []) == key
    for other in ("seed=1", "profile.vcpus=4", "data.root=/elsewhere"):
        assert reuse_key(inv, [*base, other], "m60-2q", "time-slice", []) != key, other
    assert reuse_key(inv, base, "m60-2q", "mps", []) != key
    node = {"gpus": [{"name": "GRID M60-2Q"}], "driver": "535.183.06"}  # a fleet's node: its GPU and driver count
    on_fleet = reuse_key(inv, base, "m60-2q", "time-slice", [node])
    assert on_fleet != key and reuse_key(inv, base, "m60-2q", "time-slice", [{**node, "driver": "550.90"}]) != on_fleet


def test_sizing_steps_measure_only_those_counts_and_a_fleet_cuts_them_where_its_nodes_end():
    from suites.capacity.size_settings import load_settings
    from suites.commands.size import part_overrides
    from suites.config.compose import compose_run
    from suites.config.profiles import ProfileConfig
    from suites.config.schema import register_configs

    register_configs()
    settings = load_settings("default", ["sizing.steps=[1,2,4,8]"])
    line = part_overrides(settings, "m60-1q", "time-slice", "smoke", ProfileConfig(name="m60-1q"), 8)
    assert "scenario.study.steps=[1,2,4,8]" in line and "scenario.study.max_guests=8" in line
    labels = [r.label for r in compose_run(line).runs]
    assert [x.rsplit("/", 1)[1] for x in labels] == ["ml", "cad", "n1", "n2", "n4", "n8"]
    cut = part_overrides(settings, "m60-1q", "time-slice", "smoke", ProfileConfig(name="m60-1q"), 3)
    assert "scenario.study.steps=[1,2]" in cut and "scenario.study.max_guests=2" in cut
