"""The gpu-check checks that run the suite's own commands (suites/gpucheck/suite_checks.py) and their judges: each
judge fed results that break it and results that meet it; what each check asks of its command."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from suites.gpucheck import judges as judge
from suites.gpucheck import suite_checks
from suites.gpucheck.checks import Context
from tests.support.hosts import gpu_host


def guest(gid: str = "g0", status: str = "ok", metrics: dict | None = None, info: dict | None = None) -> dict:
    return {"result": {"guest_id": gid, "status": status, "error": None, "metrics": metrics or {},
                       "info": {"device": "NVIDIA H200", **(info or {})}}, "sampled": {}}


def test_c3_every_profile_within_its_framebuffer_on_the_whole_data_set():
    fits = {p: {"guests": [guest(metrics={"gpu_mem_need_MiB": 914.0}, info={"train_images": 60_000})]}
            for p in suite_checks.M60}
    assert judge.caps_in_profiles(fits, suite_checks.M60, 60_000).result == "ok"
    over = {**fits, "m60-1q": {"guests": [guest(metrics={"gpu_mem_need_MiB": 1066.0})]}}
    assert judge.caps_in_profiles(over, suite_checks.M60, 60_000).result == \
        "failed: m60-1q: needs 1,066 MiB > its 1,024 MiB framebuffer"
    stopped = {**fits, "m60-1q": {"guests": [guest(status="failed")]}}
    stopped["m60-1q"]["guests"][0]["result"]["error"] = "framebuffer cap exceeded (m60-1q: 1024 MiB ...)"
    assert "m60-1q: guest g0: framebuffer cap exceeded" in judge.caps_in_profiles(stopped, suite_checks.M60,
                                                                                  60_000).result
    uncounted = {**fits, "m60-4q": {"guests": [guest(info={"train_images": 60_000})]}}  # no gpu_mem_need_MiB
    on_gpu = judge.caps_in_profiles(uncounted, suite_checks.M60, 60_000)  # the rule rests on the need: a failure
    assert on_gpu.result == "failed: m60-4q: its need (the tensors' peak + the CUDA context) was not counted"
    played = judge.caps_in_profiles(uncounted, suite_checks.M60, 60_000, counted=False)  # a rehearsal: said
    assert played.result == "ok" and "m60-4q need not played of 4,096 MiB" in played.figure
    assert played.figure.endswith("(a stand-in has no CUDA allocator: the memory table counts the need)")
    assert "m60-4q need not counted of 4,096 MiB" in on_gpu.figure
    assert "nan" not in on_gpu.figure + played.figure
    fewer = {**fits, "m60-8q": {"guests": [guest(metrics={"gpu_mem_need_MiB": 900.0}, info={"train_images": 24_000})]}}
    assert "m60-8q: trained on 24,000 images, not all 60,000" in judge.caps_in_profiles(fewer, suite_checks.M60,
                                                                                         60_000).result


def row(label: str, **kw: str) -> dict[str, str]:
    return {"label": label, "status": "ok", "n": "2", "time_x": "1", "time_x_ci_low": "", "time_x_ci_high": "",
            "time_verdict": "baseline", **kw}


def test_i_a_comparison_needs_its_interval_and_a_verdict():
    good = [row("1-gpu"), row("cpu", time_x="6.1", time_x_ci_low="5.8", time_x_ci_high="6.4", time_verdict="slower")]
    assert judge.comparison_rows(good, "cpu").result == "ok"
    assert judge.comparison_rows(good, "cpu").figure == "cpu time 6.10x [5.80, 6.40], slower (n=2)"
    assert judge.comparison_rows([row("1-gpu"), row("cpu", time_x="6.1")], "cpu").result == "failed: cpu: no interval"
    assert judge.comparison_rows([row("1-gpu", status="failed"), *good[1:]], "cpu").result == "failed: 1-gpu: failed"
    busy = [good[0], {**good[1], "time_verdict": "inconclusive (host busy ...)"}]
    assert judge.comparison_rows(busy, "cpu").result.startswith("inconclusive: inconclusive (host busy")
    assert judge.comparison_rows(good[:1], "cpu").result == "failed: no cpu row in comparison.csv"


def test_j_a_mixed_phase_overlaps_its_guests_windows():
    phase = {"guests": [guest("g0"), guest("g1")], "host_metrics": {"overlap_pct": 97.0}}
    assert judge.mixed_phase(phase, 90.0).result == "ok"
    assert judge.mixed_phase({**phase, "host_metrics": {"overlap_pct": 41.0}}, 90.0).result == \
        "failed: overlap 41 % < 90 %"
    assert judge.mixed_phase({**phase, "host_metrics": {}}, 90.0).result == "failed: overlap unmeasured < 90 %"


def test_k_l_a_command_passes_with_its_report_and_its_answer():
    out = "size: plan ...\n20 CAD user(s) + 2 ML user(s) on NVIDIA H200: h200-mig-1-18c, 3..4 CAD guest(s) per " \
          "GPU\nsize: /x/sizing.html (210 s)\n"
    ok = judge.command_answer(0, out, "", "size", "CAD user(s)")
    assert ok.result == "ok" and ok.figure.startswith("20 CAD user(s) + 2 ML user(s) on NVIDIA H200: h200-mig-1-18c")
    unsure = out.replace("h200-mig-1-18c, 3..4 CAD guest(s) per GPU", "inconclusive: host busy")
    assert judge.command_answer(0, unsure, "", "size", "CAD user(s)").result.startswith("inconclusive: ")
    assert judge.command_answer(2, "", "error: sizing.budget_s=60: ...\n", "size", "CAD user(s)").result == \
        "failed: error: sizing.budget_s=60: ..."
    assert judge.command_answer(0, "size: /x/sizing.html\n", "", "size", "CAD user(s)").result == \
        "failed: no line with 'CAD user(s)'"


def test_k_sizes_the_two_densest_candidates_of_this_gpu():
    assert suite_checks.two_candidates("NVIDIA H200") == ["h200-mig-2-35c", "h200-mig-1-18c"]
    assert suite_checks.two_candidates("no such GPU") == []


def test_c3_trains_on_60000_images_real_where_data_root_has_mnist_else_synthetic(tmp_path: Path):
    ctx = Context(tmp_path, gpu_host("NVIDIA H200", 143_771.0), None, math.inf, print)
    assert suite_checks.mnist_data(ctx) == ["data.synthetic_train=60000"]
    (tmp_path / "MNIST" / "raw").mkdir(parents=True)
    (tmp_path / "MNIST" / "raw" / "train-images-idx3-ubyte").write_bytes(b"")
    ctx.data_root = str(tmp_path)
    assert suite_checks.mnist_data(ctx) == [f"data.root={tmp_path}", "data.synthetic=false"]


def test_l_is_skipped_unless_b2_and_b3_both_ran(tmp_path: Path):
    from suites.gpucheck.checks import CheckSkipped

    ctx = Context(tmp_path, gpu_host("NVIDIA H200", 143_771.0), None, math.inf, print)
    with pytest.raises(CheckSkipped, match="b2 and b3 did not both run"):
        suite_checks.compare(ctx)


def test_j_a_mixed_comparison_without_its_phases_figures_fails_and_is_never_a_skip(tmp_path: Path, monkeypatch):
    """A comparison that ended without its phase's results.json is the suite's fault: a skip would pass it by."""
    from suites.gpucheck.checks import run_check

    monkeypatch.setattr(suite_checks, "bench", lambda ctx, name, overrides, limit_s, expect: {})  # wrote no phase
    ctx = Context(tmp_path, gpu_host("NVIDIA H200", 143_771.0), None, math.inf, lambda line: None)
    row = run_check(ctx, "j", lambda: suite_checks.mixed(ctx))
    assert row.result == "failed: the mixed phase wrote no results.json (logs/j-mixed.log)"


def test_l_a_compare_tables_row_is_said_with_its_columns_names_and_its_wrapped_cells():
    """make rehearse's l row showed the compare table's line as it was drawn ('│ fixed-step images/s │ 257,027 (1)
    │ ...'); a figure names each cell, and a cell rich wrapped onto the next line is read whole."""
    out = """compare: A = b2, B = b3
┏━━━━━━━━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━┓
┃ figure                      ┃ A median (n) ┃       B / A [95% CI] ┃ verdict                           ┃
┡━━━━━━━━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━┩
│ 1-gpu / makespan s          │     1.57 (3) │ 1.027 [0.969, 1.050] │ no change                         │
│ cpu / fixed-step images/s   │    2,547 (3) │ 1.029 [0.967, 1.052] │ inconclusive (CI ±4.3 %, n=3; ~4  │
│                             │              │                      │ repeats would settle it)          │
└─────────────────────────────┴──────────────┴──────────────────────┴───────────────────────────────────┘
compare: /x/compare.html (5.2 s)
"""
    said = judge.command_answer(0, out, "", "compare", "images/s")
    assert said.figure == ("figure: cpu / fixed-step images/s; A median (n): 2,547 (3); B / A [95% CI]: 1.029 "
                           "[0.967, 1.052]; verdict: inconclusive (CI ±4.3 %, n=3; ~4 repeats would settle it)")
    assert said.result.startswith("inconclusive: figure: cpu / fixed-step images/s;")  # the wrapped cell's word
    plain = judge.command_answer(0, "size: x.html\n20 CAD user(s): m60-2q\n", "", "size", "CAD user(s)")
    assert plain.figure == "20 CAD user(s): m60-2q"


def test_c3_runs_its_four_profiles_as_one_sweep_command_and_reads_each_points_results(tmp_path: Path, monkeypatch):
    """Four commands were four process starts, imports and store openings for one check (issue 88)."""
    import json
    import subprocess

    from suites.gpucheck import checks

    ran = []

    def one_command(ctx, name, argv, limit_s):  # the sweep as Hydra's basic sweeper lays it out: job n in <dir>/<n>
        ran.append(argv)
        for job, profile in enumerate(suite_checks.M60):
            if profile != "m60-1q":
                (ctx.root / "runs" / name / str(job)).mkdir(parents=True)
                (ctx.root / "runs" / name / str(job) / "results.json").write_text(json.dumps({"profile": profile}))
        return subprocess.CompletedProcess(argv, 1, "", "error: sweep job 3 (profile=m60-1q): refused: because\n")

    monkeypatch.setattr(checks, "run_logged", one_command)
    ctx = Context(tmp_path, gpu_host("NVIDIA H200", 143_771.0), None, math.inf, print)
    with pytest.raises(checks.CheckFailed, match=r"^profile=m60-1q: error: sweep job 3 \(profile=m60-1q\): refused: "
                                                 r"because \(logs/c3.log\)$"):
        suite_checks.mnist_in_every_profile(ctx)
    (argv,) = ran
    assert argv[3:6] == ["bench", "-m", "profile=m60-8q,m60-4q,m60-2q,m60-1q"]
    assert f"hydra.sweep.dir={tmp_path / 'runs' / 'c3'}" in argv and "workload=mnist-torch" in argv
    assert ctx.results["c3-m60-2q"] == {"profile": "m60-2q"}  # each point's figures, by its profile
