"""The checks that run the suite's own commands as a user runs them on a GPU, beside the GPU paths of
:mod:`suites.gpucheck.checks`: MNIST in every M60 profile with the whole data set (c3), a comparison (i), a mixed CAD
+ ML run (j), a small ``make size`` with an answer (k) and ``make compare`` of two of gpu-check's own runs (l). Each
records into gpu-check's store, so its runs nest under the gpu-check run; each judge is in
:mod:`suites.gpucheck.judges`."""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

from suites.config.profile_files import candidate_profiles
from suites.gpucheck import judges as judge
from suites.gpucheck.checks import CheckFailed, CheckSkipped, Context, Row, bench, check, run_logged, store_args, sweep
from suites.run.mixed import MIN_OVERLAP_PCT

M60 = {"m60-8q": 8192.0, "m60-4q": 4096.0, "m60-2q": 2048.0, "m60-1q": 1024.0}  # framebuffers, MiB
MNIST_IMAGES = 60_000  # the whole training set: what meets m60-1q's 1,024 MiB on a GPU
REPEATS = 3  # what docs/run-rules.md asks of a comparison's phases: a run a GPU call records passes it


def mnist_data(ctx: Context) -> list[str]:
    """Real MNIST where data.root has it, else a synthetic set of its full size (60,000 images)."""
    if ctx.data_root and (Path(ctx.data_root) / "MNIST" / "raw" / "train-images-idx3-ubyte").exists():
        return [f"data.root={ctx.data_root}", "data.synthetic=false"]
    return [f"data.synthetic_train={MNIST_IMAGES}"]


@check("c3", "MNIST in every M60 profile, all 60,000 images", "each of m60-8q, 4q, 2q, 1q trains mnist-torch on "
       "all 60,000 images within its framebuffer: its need (tensors' peak + CUDA context) <= the framebuffer, never "
       "stopped at its cap")
def mnist_in_every_profile(ctx: Context) -> Row:
    runs = sweep(ctx, "c3", "profile", list(M60), ["workload=mnist-torch", *mnist_data(ctx)], limit_s=480)
    return Row.of("c3", judge.caps_in_profiles(runs, M60, MNIST_IMAGES, counted=ctx.stand_in is None))


@check("i", f"a comparison: MNIST on the GPU vs the CPU (full size, {REPEATS} repeats)", "the cpu phase's time "
       "ratio with its 95 % interval and a verdict; every phase finished")
def gpu_vs_cpu(ctx: Context) -> Row:
    bench(ctx, "i-gpu-vs-cpu", ["scenario=gpu-vs-cpu", "workload=mnist-torch", *mnist_data(ctx),
                                f"scenario.repeats={REPEATS}"], limit_s=180, expect="comparison.csv")
    with (ctx.root / "runs" / "i-gpu-vs-cpu" / "comparison.csv").open() as f:
        return Row.of("i", judge.comparison_rows(list(csv.DictReader(f)), "cpu"))


@check("j", f"a mixed run: CAD and ML sharing m60-8q (full size, {REPEATS} repeats)", f"every guest ok; the CAD "
       f"and ML guests' timed windows "
       f"overlap >= {MIN_OVERLAP_PCT:g} % (else their slowdowns are no verdict)")
def mixed(ctx: Context) -> Row:
    bench(ctx, "j-mixed", ["scenario=mixed", "profile=m60-8q", f"scenario.repeats={REPEATS}"], limit_s=180,
          expect="comparison.csv")
    phases = sorted((ctx.root / "runs" / "j-mixed").glob("m60-8q-mixed*/results.json"))
    if not phases:  # the comparison finished without its phase's figures: the suite's fault, never a skip
        raise CheckFailed("the mixed phase wrote no results.json (logs/j-mixed.log)")
    worst = min((json.loads(p.read_text()) for p in phases),
                key=lambda r: float(r.get("host_metrics", {}).get("overlap_pct", -1.0)))
    return Row.of("j", judge.mixed_phase(worst, MIN_OVERLAP_PCT))


def two_candidates(gpu: str) -> list[str]:
    """The two vGPU profiles of ``gpu`` with the smallest framebuffers (the most guests per GPU: the densest
    answer a sizing can give), fewer where it has fewer."""
    return [p.name for p in candidate_profiles(gpu, [])][-2:]


@check("k", f"make size: two candidates, timeslice and MPS, {REPEATS} repeats", "an answer: a recommended "
       "profile with its guests per GPU (an inconclusive answer is said, not passed)")
def sizing(ctx: Context) -> Row:
    gpu = str(ctx.inv.gpus[0].get("name")) if ctx.inv.gpus else ""
    profiles = two_candidates(gpu)
    if not profiles:
        raise CheckSkipped(f"no vGPU profile of {gpu or 'this GPU'} in configs/profile")
    left = ctx.share_s - 20
    argv = [sys.executable, "-m", "suites", "size", f"sizing.profiles=[{','.join(profiles)}]",
            "sizing.policies=[timeslice,mps]", f"sizing.repeats={REPEATS}", "sizing.counts=[1]", "sizing.reuse=false",
            f"sizing.budget_s={max(left, 1):.0f}", f"sizing.out_dir={ctx.root / 'sizing'}", *store_args(ctx),
            "progress=quiet"]
    done = run_logged(ctx, "k-size", ctx.played(argv), left + 30)
    return Row.of("k", judge.command_answer(done.returncode, done.stdout, done.stderr, "size", "CAD user(s)"))


@check("l", "make compare: b2 (eager) against b3 (compiled, CUDA graphs)", "B / A of images/s with its 95 % "
       "interval and a verdict, the set-ups' one difference named; the report written")
def compare(ctx: Context) -> Row:
    a, b = (ctx.root / "runs" / name for name in ("b2-cifar-eager", "b3-cifar-compile"))
    if not (a / "results.json").exists() or not (b / "results.json").exists():
        raise CheckSkipped("b2 and b3 did not both run")
    argv = [sys.executable, "-m", "suites", "compare", str(a), str(b),
            f"--tracking-uri=sqlite:///{ctx.root / 'mlflow.db'}", f"--out={ctx.root / 'compare'}"]
    done = run_logged(ctx, "l-compare", argv, 120)
    return Row.of("l", judge.command_answer(done.returncode, done.stdout, done.stderr, "compare", "images/s"))
