"""Tests of ``suites/commands/size.py``."""

from __future__ import annotations

from tests.support.hosts import gpu_host


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
    from suites.capacity.budget import sweeps_of
    from suites.capacity.size_settings import load_settings
    from suites.commands.size import part_overrides
    from suites.config.compose import compose_run
    from suites.config.profiles import ProfileConfig
    from suites.config.schema import register_configs

    register_configs()
    settings = load_settings("default", ["sizing.steps=[1,2,4,8]"])
    (sweep,) = sweeps_of(settings.steps, {"m60-1q": 8}, ["time-slice"])
    line = part_overrides(settings, sweep, 3, "smoke", ProfileConfig(name="m60-1q"))
    assert "scenario.study.steps=[1,2,4,8]" in line and "scenario.study.max_guests=8" in line
    labels = [r.label for r in compose_run(line).runs]
    assert [x.rsplit("/", 1)[1] for x in labels] == ["ml", "cad", "n1", "n2", "n4", "n8"]
    (cut,) = sweeps_of(settings.steps, {"m60-1q": 3}, ["time-slice"])
    line = part_overrides(settings, cut, 3, "smoke", ProfileConfig(name="m60-1q"))
    assert cut.steps == (1, 2) and "scenario.study.max_guests=2" in line  # 1..2: every count, no steps= needed
    (every,) = sweeps_of([], {"m60-1q": 3}, ["time-slice"])
    assert every.steps == (1, 2, 3) and "scenario.study.steps=" not in " ".join(
        part_overrides(settings, every, 3, "smoke", ProfileConfig(name="m60-1q")))


def test_a_sizing_planned_for_one_h200_or_h100_fits_its_budget_and_says_what_it_trimmed(tmp_path, monkeypatch):
    """cce1a94 stopped on an H200 (no profile of it) and planned 40-60 minutes on an H100, with h100-80c asking
    81,920 MiB of the card's 81,559."""
    import io

    from rich.console import Console

    from suites.capacity.size_settings import load_settings
    from suites.commands.size import plan_parts
    from suites.config.schema import register_configs

    monkeypatch.chdir(tmp_path)  # no calibration cache of this host: the planner's table for a GPU host
    register_configs()
    for name, mem, sized in (("NVIDIA H200", 143_771.0, "h200"), ("NVIDIA H100 80GB HBM3", 81_559.0, "h100")):
        settings = load_settings("default", [])
        said = io.StringIO()
        plan = plan_parts(settings, gpu_host(name, mem), [f"tracking_uri=sqlite:///{tmp_path}/m.db"],
                          Console(file=said, width=200))
        assert plan.fitted.estimate_s <= settings.budget_s, (name, plan.fitted)
        assert plan.parts and all(p.profile.startswith(sized) for p in plan.parts)
        assert plan.fitted.trims and all(f"trimmed to sizing.budget_s=540: {t}" in plan.notes
                                         for t in plan.fitted.trims)
        text = " ".join(said.getvalue().split())
        assert "size: trimmed: " in text and "of sizing.budget_s=540" in text
        if sized == "h100":  # the whole-card profile asks more than the card has: said, not measured
            assert any(n.startswith("h100-80c: not measured: its 81920 MiB framebuffer is more than the 81,559 MiB")
                       for n in plan.notes), plan.notes
            assert "h100-80c" not in {p.profile for p in plan.parts}
