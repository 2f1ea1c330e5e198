"""Tests of ``suites.sizing.plan.py``: what a sizing measures, planned before anything starts."""

from __future__ import annotations

import pytest

from tests.support.hosts import gpu_host


def test_a_stored_consolidation_is_reused_only_for_the_same_measurement():
    """The reuse key holds the user's bench overrides (another seed, vCPU count or data is another measurement) and
    leaves out where a run writes and what it prints (another store folder or cache is the same measurement)."""
    from gpu_probe.inventory import collect
    from suites.sizing.plan import reuse_key

    inv = collect()
    base = ["scenario=consolidation", "profile=m60-2q", "progress=quiet", "tracking_uri=sqlite:////a/m.db",
            "artifact_dir=/a/art", "data.cache_dir=/a/data"]
    key = reuse_key(inv, base, "m60-2q", "timeslice", [])
    moved = ["scenario=consolidation", "profile=m60-2q", "tracking_uri=sqlite:////b/m.db", "artifact_dir=/b/art",
             "data.cache_dir=/b/data", "wait_for_cores_s=0"]
    assert reuse_key(inv, moved, "m60-2q", "timeslice", []) == key
    for other in ("seed=1", "profile.vcpus=4", "data.root=/elsewhere"):
        assert reuse_key(inv, [*base, other], "m60-2q", "timeslice", []) != key, other
    assert reuse_key(inv, base, "m60-2q", "mps", []) != key
    node = {"gpus": [{"name": "GRID M60-2Q"}], "driver": "535.183.06"}  # a fleet's node: its GPU and driver count
    on_fleet = reuse_key(inv, base, "m60-2q", "timeslice", [node])
    assert on_fleet != key and reuse_key(inv, base, "m60-2q", "timeslice", [{**node, "driver": "550.90"}]) != on_fleet


@pytest.mark.heavy
def test_sizing_steps_measure_only_those_counts_and_a_fleet_cuts_them_where_its_nodes_end():
    from suites.capacity.budget import sweeps_of
    from suites.config.compose import compose_run
    from suites.config.profiles import ProfileConfig
    from suites.config.schema import register_configs
    from suites.sizing.plan import part_overrides
    from suites.sizing.settings import load_settings

    register_configs()
    settings = load_settings("default", ["sizing.counts=[1,2,4,8]"])
    (sweep,) = sweeps_of(settings.counts, {"m60-1q": 8}, ["timeslice"])
    line = part_overrides(settings, sweep, 3, "smoke", ProfileConfig(name="m60-1q"))
    assert "scenario.mixed.counts=[1,2,4,8]" in line and "scenario.mixed.max_guests=8" in line
    labels = [r.label for r in compose_run(line).runs]
    assert [x.rsplit("/", 1)[1] for x in labels] == ["ml", "cad", "n1", "n2", "n4", "n8"]
    (cut,) = sweeps_of(settings.counts, {"m60-1q": 3}, ["timeslice"])
    line = part_overrides(settings, cut, 3, "smoke", ProfileConfig(name="m60-1q"))
    assert cut.counts == (1, 2) and "scenario.mixed.max_guests=2" in line  # 1..2: every count, no counts= needed
    (every,) = sweeps_of([], {"m60-1q": 3}, ["timeslice"])
    assert every.counts == (1, 2, 3) and "scenario.mixed.counts=" not in " ".join(
        part_overrides(settings, every, 3, "smoke", ProfileConfig(name="m60-1q")))


@pytest.mark.heavy
def test_a_sizing_planned_for_one_h200_or_h100_fits_its_budget_and_says_what_it_trimmed(tmp_path, monkeypatch):
    """cce1a94 stopped on an H200 (no profile of it) and planned 40-60 minutes on an H100, with h100-80c asking
    81,920 MiB of the card's 81,559."""
    import io

    from rich.console import Console

    from suites.config.schema import register_configs
    from suites.sizing.campaign import plan_parts
    from suites.sizing.settings import load_settings

    monkeypatch.chdir(tmp_path)  # no trial-run cache of this host: the planner's table for a GPU host
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


@pytest.mark.heavy
def test_a_cpu_host_measures_a_stand_in_whose_vms_per_gpu_allow_its_steps_and_says_why(tmp_path, monkeypatch):
    """cce1a94 measured l40s-48q (one VM per card) with 1-3 CAD guests beside an ML guest: steps no card can hold."""
    import io

    from rich.console import Console

    from gpu_probe.inventory import collect
    from suites.config.profiles import ProfileConfig
    from suites.config.schema import register_configs
    from suites.sizing.campaign import plan_parts
    from suites.sizing.settings import load_settings

    monkeypatch.chdir(tmp_path)
    register_configs()
    inv = collect()
    inv.gpus = []  # this kind of host has none; the test holds on a host that has one too
    plan = plan_parts(load_settings("default", ["sizing.gpu=L40S"]), inv, [f"tracking_uri=sqlite:///{tmp_path}/m.db"],
                      Console(file=io.StringIO()))
    (part,) = plan.parts
    chosen: ProfileConfig = next(c for c in plan.candidates if c.name == part.profile)
    steps = plan.fitted.sweeps[0].counts
    assert chosen.max_per_gpu - 1 >= max(steps) == 4 and chosen.name != "l40s-48q"
    assert any(n.startswith(f"no GPU: the stand-in profile is {chosen.name}: its {chosen.max_per_gpu} VM(s) per GPU "
                            "allow 4 CAD guest(s) beside the ML guest (sizing.consolidation_profile=m60-2q is not a "
                            "profile of this GPU") for n in plan.notes), plan.notes


@pytest.mark.heavy
def test_a_gpu_host_never_measures_a_step_past_a_profiles_vms_per_gpu(tmp_path, monkeypatch):
    import io

    from rich.console import Console

    from suites.config.schema import register_configs
    from suites.sizing.campaign import plan_parts
    from suites.sizing.settings import load_settings

    monkeypatch.chdir(tmp_path)
    register_configs()
    plan = plan_parts(load_settings("default", ["sizing.gpu=Tesla M60", "sizing.budget_s=86400"]),
                      gpu_host("Tesla M60", 8192.0), [f"tracking_uri=sqlite:///{tmp_path}/m.db"],
                      Console(file=io.StringIO()))
    per_gpu = {c.name: c.max_per_gpu for c in plan.candidates}
    deepest = {s.profile: max(s.counts) for s in plan.fitted.sweeps}
    assert deepest == {"m60-4q": 1, "m60-2q": 3, "m60-1q": 4, "m60-0q": 4}
    assert all(n <= per_gpu[p] - 1 for p, n in deepest.items())
    assert any(n.startswith("m60-8q: not measured: its 1 VM(s) per GPU leave no CAD guest beside the ML guest's")
               for n in plan.notes)


def test_a_sizing_that_does_not_fit_its_budget_after_every_trim_is_refused_before_anything_runs(tmp_path, monkeypatch):
    """ee6319b said 'still 1036 s > sizing.budget_s=540 with one candidate: measured all the same' and ran past 10
    minutes; now the smallest sizing's estimate is said with the budget it needs, and nothing starts."""
    import io

    from rich.console import Console

    from gpu_probe.inventory import collect
    from suites.config.schema import register_configs
    from suites.errors import ConfigError
    from suites.sizing.campaign import plan_parts
    from suites.sizing.settings import load_settings

    monkeypatch.chdir(tmp_path)  # no trial-run cache: the planner's table
    register_configs()
    inv = collect()
    inv.gpus = []
    with pytest.raises(ConfigError) as exc:
        plan_parts(load_settings("default", ["sizing.budget_s=60"]), inv, [f"tracking_uri=sqlite:///{tmp_path}/m.db"],
                   Console(file=io.StringIO()))
    said = str(exc.value)
    assert said.startswith("sizing.budget_s=60: the smallest sizing (m60-1q timeslice, count [1], 2 repeats) takes "
                           "about ") and "; give sizing.budget_s >= " in said
    assert not (tmp_path / "outputs").exists()  # nothing written


def test_each_cad_user_type_is_planned_at_its_own_replay_length(tmp_path, monkeypatch):
    """A heavy user's viewsets replay 336 frames at full size, a light user's 96: the phase seconds differ by the
    replay where it is the longer part of a phase (a trial-run cache whose replay outlasts the ML guest's work)."""
    import json

    from gpu_probe.inventory import collect
    from suites.campaign import costs
    from suites.config.schema import register_configs
    from suites.sizing.campaign import phase_seconds
    from suites.sizing.plan import frames_of
    from suites.sizing.settings import load_settings

    monkeypatch.chdir(tmp_path)
    register_configs()
    inv = collect()
    inv.gpus = []
    assert frames_of(["mechanical", "architecture", "product"], "full") == 336 and frames_of(["product"], "full") == 96
    assert frames_of(["mechanical"], "smoke") == 24  # the smoke preset's 8 frames of each of its 3 tests
    settings = load_settings("default", ["sizing.users.light=20", "sizing.users.heavy=5"])
    (tmp_path / "outputs" / "study").mkdir(parents=True)
    (tmp_path / "outputs" / "study" / costs.CACHE).write_text(json.dumps({costs.fingerprint(inv): {
        "graphics-replay/full": 7.0 + 336.0, "mnist-torch/full": 7.0 + 30.0}}))  # 1 s a frame, 30 s of ML work
    costs, source = phase_seconds(settings, inv, "full")
    assert costs["heavy"] == 7.0 + 336.0 and costs["light"] == 7.0 + 96.0 and source.startswith("timed by trial runs")
    assert costs[""] == 7.0 + 144.0  # cad_size medium: mechanical's 144 frames


@pytest.mark.heavy
def test_a_gpu_host_plans_its_phases_from_trial_runs_there_not_a_cpu_table(tmp_path, monkeypatch):
    """ee6319b planned an H200's 48 MIG phase runs at 11 s each from the study planner's table; a GPU host now times
    one bench run of each workload first (cached under its fingerprint, as the study's), and fits what is left."""
    import io

    from rich.console import Console

    from suites.campaign import costs
    from suites.config.schema import register_configs
    from suites.errors import ConfigError
    from suites.sizing.campaign import plan_parts
    from suites.sizing.settings import load_settings

    monkeypatch.chdir(tmp_path)
    register_configs()
    ran: list[str] = []

    def timed_run(workload: str, tier: str, overrides: list[str], timeout_s: float) -> tuple[float, str]:
        ran.append(f"{workload}/{tier}")  # the bench run itself is the study's, tested there
        return (40.0 if workload == "graphics-replay" else 25.0), ""

    monkeypatch.setattr(costs, "timed_run", timed_run)
    inv, said = gpu_host("NVIDIA H200", 143_771.0), io.StringIO()
    settings = load_settings("default", ["sizing.budget_s=3000", "sizing.profiles=[h200-mig-1-18c]"])
    plan = plan_parts(settings, inv, [f"tracking_uri=sqlite:///{tmp_path}/m.db"], Console(file=said, width=300),
                      trial=True)
    assert ran == ["graphics-replay/full", "mnist-torch/full"]
    assert costs.cached_trials(tmp_path / "outputs" / "study", inv) == {("graphics-replay", "full"): 40.0,
                                                                 ("mnist-torch", "full"): 25.0}
    text = " ".join(said.getvalue().split())
    assert "size: a trial run of graphics-replay (full sizes)" in text and "timed by trial runs on this host" in text
    assert plan.fitted.estimate_s <= settings.budget_s
    plan_parts(settings, inv, [f"tracking_uri=sqlite:///{tmp_path}/m.db"], Console(file=io.StringIO()), trial=True)
    assert len(ran) == 2  # cached: a second sizing on this host runs none
    with pytest.raises(ConfigError, match="seed"):  # bad bench input: one error before any trial run
        plan_parts(settings, gpu_host("NVIDIA H100 80GB HBM3", 81_559.0), ["seed=abc"], Console(file=io.StringIO()),
                   trial=True)
    assert len(ran) == 2


@pytest.mark.heavy
def test_a_rehearsals_phases_cost_the_devices_work_never_this_hosts_trial_runs(tmp_path, monkeypatch):
    """make rehearse's k (make size at an H200's speed) planned from trial runs on this host: beside a CPU burner a
    phase was timed three times the device's and the smallest sizing refused for its budget (a fresh-clone CI,
    2026-11-29). A stand-in's phases cost the device file's work seconds and the GPU's set-up, whatever this host
    timed before."""
    import io

    from rich.console import Console

    from suites.campaign import costs
    from suites.campaign.costs import OVERHEAD_S, WORK_S
    from suites.config.schema import register_configs
    from suites.sizing.campaign import phase_seconds, plan_parts, trials_dir
    from suites.sizing.plan import frames_of
    from suites.sizing.settings import load_settings

    monkeypatch.chdir(tmp_path)
    register_configs()
    inv = gpu_host("NVIDIA H200", 143_771.0)
    settings = load_settings("default", ["sizing.budget_s=3000", "sizing.profiles=[h200-mig-1-18c]"])
    costs.save(trials_dir(settings), inv, {("graphics-replay", "full"): 90.0, ("mnist-torch", "full"): 90.0})
    assert phase_seconds(settings, inv, "full")[0][""] == 90  # this host's trials, where no device is played
    work = {"mnist-torch/full": 0.8}  # no graphics-replay/full: the planner's table for it
    phase, source = phase_seconds(settings, inv, "full", work)
    replay = WORK_S[("graphics-replay", "full")]["gpu"] * frames_of(list(settings.cad_sizes["medium"]), "full") \
        / frames_of(["mechanical", "architecture", "product"], "full")
    assert phase[""] == round(OVERHEAD_S["gpu"] + max(0.8, replay), 1) and source.startswith("the device file's")
    monkeypatch.setattr(costs, "timed_run", lambda *a: pytest.fail("a trial run under a stand-in"))
    plan = plan_parts(settings, inv, [f"tracking_uri=sqlite:///{tmp_path}/m.db"], Console(file=io.StringIO()),
                      trial=True, device_work=work)
    assert plan.fitted.estimate_s <= settings.budget_s


def test_a_gpu_sizing_beside_another_benchmark_run_times_no_trial_run_and_says_so(tmp_path, monkeypatch):
    """The study skipped its trial runs where another run held the cores; the sizing timed that run's load."""
    import io

    from rich.console import Console

    from suites.campaign import costs
    from suites.sizing import campaign
    from suites.sizing.settings import SizingSettings

    monkeypatch.setattr(campaign, "held_by_others", lambda cores: {0: object()})
    monkeypatch.setattr(campaign, "describe", lambda held: "core 0 (a bench, pid 4242)")
    monkeypatch.setattr(costs, "time_trials", lambda *a, **k: pytest.fail("a trial run beside another run"))
    said = io.StringIO()
    campaign.time_phases(SizingSettings(out_dir=str(tmp_path / "sizing")), None, [], "full",  # type: ignore[arg-type]
                         Console(file=said, width=200))
    assert "size: no trial runs (another benchmark run holds core 0 (a bench, pid 4242)): planned from what is " \
           "cached" in said.getvalue()
