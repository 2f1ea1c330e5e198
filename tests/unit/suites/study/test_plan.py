"""Tests of ``suites/study/plan.py`` (pure): the study planned over fake inventories, budgets and measured
seconds; each trim said. (They sat in e2e/test_study.py beside the real study.)"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from suites.campaign.costs import START_S
from suites.study.plan import EPISODE_1, PLAN_SHARE, Measured, plan_study
from suites.study.settings import StudySettings

NO_TF = {"tensorflow": "TensorFlow not installed"}


def names(plan) -> dict[str, list[str]]:
    return {p.name: p.labels for p in plan.parts}


def skipped(plan) -> dict[str, str]:
    return {s.what: s.why for s in plan.skips}


def test_no_gpu_runs_episode_2_and_skips_every_gpu_part_saying_why():
    plan = plan_study(0, NO_TF, StudySettings())
    assert names(plan) == {"mixed": ["m60-8q", "m60-4q", "m60-2q", "m60-1q"], "consolidation": ["m60-2q"]}
    why = skipped(plan)
    assert why["gpu-vs-cpu"] == "1-gpu needs 1 GPU; host has no GPU"
    assert why["scaling"] == "1-gpu needs 1 GPU, 2-gpu needs 2 GPUs, 4-gpu needs 4 GPUs; host has no GPU"
    assert why["gpu-vs-cpu-keras"] == "TensorFlow not installed"
    assert {"passthrough-vs-vgpu-mnist", "passthrough-vs-vgpu-cifar10", "multi-guest"} <= set(why)
    # planned to 80 % of the 480 s (the deadline is hard, the estimate errs): a comparison pays its command's start
    # once and each repeat its cost per repeat (issue 88), so its 3 repeats fit on the table's seconds
    assert plan.tier == "smoke" and plan.repeats == 3 and plan.estimate_s <= 480 * PLAN_SHARE


def test_one_gpu_runs_what_fits_and_names_the_phases_it_cannot():
    plan = plan_study(1, {}, StudySettings(budget_s=10_000))
    parts = names(plan)
    assert parts["gpu-vs-cpu"] == ["1-gpu", "cpu"] and parts["gpu-vs-cpu-keras"] == ["1-gpu", "cpu"]
    assert parts["passthrough-vs-vgpu-mnist"] == ["passthrough", "vgpu-8q"]
    assert "scaling" not in parts and "multi-guest" not in parts
    why = skipped(plan)
    assert why["scaling"] == "2-gpu needs 2 GPUs, 4-gpu needs 4 GPUs; host has 1 GPU"
    assert why["multi-guest"] == "1x4gpu needs 4 GPUs, 4x1gpu needs 4 GPUs; host has 1 GPU"
    assert plan.tier == "full"  # a GPU host within its budget gets every workload's own sizes


def test_two_gpus_keep_the_phases_that_fit_and_four_run_everything():
    two = plan_study(2, {}, StudySettings(budget_s=10_000))
    assert names(two)["scaling"] == ["1-gpu", "2-gpu"]
    assert skipped(two)["scaling 4-gpu"] == "4-gpu needs 4 GPUs; host has 2 GPUs"
    four = plan_study(4, {}, StudySettings(budget_s=10_000))
    assert set(names(four)) == {p.name for p in EPISODE_1} | {"mixed", "consolidation"}
    assert four.skips == []


def test_on_a_gpu_the_budget_trims_rows_before_the_run_rules_and_says_so():
    """A GPU host's study is its findings: full sizes and 3 repeats (docs/run-rules.md) are kept, and the rows the
    budget cannot hold are given up first (consolidation's guests, mixed profiles, then whole parts); only the last
    part left is trimmed to smoke sizes, then to 2 repeats."""
    roomy = plan_study(1, NO_TF, StudySettings(budget_s=300))
    why = skipped(roomy)
    assert roomy.tier == "full" and roomy.repeats == 3 and roomy.estimate_s <= 300 * PLAN_SHARE
    budget = [k for k, w in why.items() if "over the budget" in w]
    assert budget and all("study.budget_s=300" in why[k] for k in budget)
    assert "full sizes (smoke sizes instead)" not in why and "repeat 3 of each phase" not in why
    if "mixed m60-4q" in budget and "mixed" in budget:
        assert budget.index("mixed m60-1q") < budget.index("mixed m60-4q") < budget.index("mixed")  # profiles first
    tight = plan_study(1, NO_TF, StudySettings(budget_s=40))
    why = skipped(tight)
    assert [p.name for p in tight.parts] == ["gpu-vs-cpu"] and tight.estimate_s <= 40 * PLAN_SHARE  # the last part
    assert tight.tier == "smoke" and "full sizes (smoke sizes instead)" in why  # then its sizes
    assert list(why).index("consolidation") < list(why).index("full sizes (smoke sizes instead)")  # rows first
    assert plan_study(1, NO_TF, StudySettings(budget_s=40, repeats=3)).repeats == 3  # asked for: kept
    cpu = plan_study(0, NO_TF, StudySettings(budget_s=60))  # a CPU host's smoke figures: repeats go before rows
    assert cpu.repeats == 2 and "repeat 3 of each phase" in skipped(cpu)


def test_missing_moderngl_skips_episode_2():
    plan = plan_study(0, {"moderngl": "moderngl not installed"}, StudySettings())
    assert plan.parts == [] and skipped(plan)["mixed"] == "moderngl not installed"


def test_the_planner_uses_the_gpu_seconds_gpu_check_measured(tmp_path: Path):
    from suites.errors import ConfigError
    from suites.study.settings import load_timings

    summary = tmp_path / "summary.json"
    summary.write_text(json.dumps({"kind": "gpu-check", "timings": {
        "cifar10-torch/full": 400.0, "mnist-torch/full": 2.5, "graphics-replay/smoke": float("nan"), "junk": 1}}))
    measured = load_timings(str(summary))
    assert measured == {("cifar10-torch", "full"): 400.0, ("mnist-torch", "full"): 2.5}  # NaN and junk dropped
    settings = StudySettings(budget_s=100_000, tier="full")
    guessed, timed = plan_study(1, {}, settings), plan_study(1, {}, settings, Measured(gpu_work=measured))
    assert timed.estimate_s > guessed.estimate_s + 1000  # cifar10 at 400 s, not the 15 s guess
    assert timed.sources["cifar10-torch"] == "make gpu-check" and guessed.sources["cifar10-torch"].startswith("table")
    assert plan_study(0, {}, settings, Measured(gpu_work=measured)).estimate_s ==\
        plan_study(0, {}, settings).estimate_s  # CPU: unused
    with pytest.raises(ConfigError, match="study.timings: .* is not a gpu-check summary.json"):
        load_timings(str(tmp_path / "missing.json"))


def test_the_plan_comes_from_this_hosts_trial_runs_where_they_ran():
    fast = Measured(trials={("graphics-replay", "smoke"): 1.0, ("mnist-torch", "smoke"): 1.0})
    slow = Measured(trials={("graphics-replay", "smoke"): 60.0, ("mnist-torch", "smoke"): 60.0})
    roomy = StudySettings(budget_s=100_000)  # nothing trimmed: the estimates themselves
    assert plan_study(0, NO_TF, roomy, fast).estimate_s < plan_study(0, NO_TF, roomy).estimate_s\
        < plan_study(0, NO_TF, roomy, slow).estimate_s
    planned = plan_study(0, NO_TF, roomy, slow)
    assert planned.sources == {"graphics-replay": "a trial run on this host", "mnist-torch": "a trial run on this host"}
    start = START_S["cpu"]  # a trial run is a whole command: its start is paid once per part, not per phase run
    assert planned.part_estimates["mixed"] == start + 3 * planned.repeats * (60.0 - start) * len(
        planned.parts[0].phases)
    assert sum(planned.part_estimates.values()) == pytest.approx(planned.estimate_s)
    # a CPU host's consolidation steps share its cores: n4's five guests on 2 cores take 2.5 steps' time
    two_cores = dataclasses.replace(slow, cores=2)
    on_two = plan_study(0, NO_TF, roomy, two_cores)  # each step repeated (cce1a94 left them out: 2.3x over)
    assert on_two.part_estimates["consolidation"] == start + on_two.repeats * (60.0 - start) * (1 + 1 + 1.5 + 2 + 2.5)
    # the trial runs' own seconds come out of the budget, and the trim says so
    whole = plan_study(0, NO_TF, StudySettings(budget_s=950), slow)
    spent = plan_study(0, NO_TF, StudySettings(budget_s=950), dataclasses.replace(slow, spent_s=200.0))
    assert spent.estimate_s <= 0.8 * 950 - 200 < whole.estimate_s <= 0.8 * 950  # the trial runs' 200 s are spent
    assert any("less the 200 s spent on trial runs" in skip.why for skip in spent.skips)
    # within the 480 s budget, a host the trial runs found slow gets less of the study, each trim said
    table, trimmed = plan_study(0, NO_TF, StudySettings()), plan_study(0, NO_TF, StudySettings(), slow)
    assert len(trimmed.skips) > len(table.skips) and trimmed.estimate_s <= 480 * PLAN_SHARE
    assert any("over the budget" in skip.why for skip in trimmed.skips)
