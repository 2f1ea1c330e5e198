"""The checks of ``make gpu-check``: every GPU-only path of the suite run once, each with its figure and what it
should be. A check runs the suite's own commands (``python -m suites bench``, ``python -m suites study``,
``gpu_probe probe``) as subprocesses, each with its log, its run directory and a time limit, and reads what they
wrote (``results.json``); a check that cannot run says why in its row, and one that breaks is a failed row with
the reason (traceback in ``<check>.log``), never the end of the others.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from gpu_probe import probe, vocab
from gpu_probe.hostload import other_load
from gpu_probe.inventory import Inventory
from gpu_probe.shapes import JsonObject
from suites.backends.mps import CONTROL
from suites.campaign import stop_group
from suites.errors import first_line
from suites.gpucheck import judges as judge
from suites.gpucheck.judges import FAILED, INCONCLUSIVE, SKIPPED, Verdict, guests, metric
from suites.gpucheck.played import StandIn
from suites.validity import EMULATED
from suites.workloads.cifar10_torch import Cifar10TorchConfig
from suites.workloads.graphics import egldevice

# Per repeat in check b: a timed window a 2 % CoV can stand on. 2 epochs (100k images) were ~0.4 s at the goal
# rate, where one host sync or a clock step is a percent; 10 (the record's 9.9) are ~2 s there, ~5 s at 100k/s.
CIFAR_EPOCHS = 10
CIFAR_MIN_WINDOW_S = 1.0  # a repeat timed over less carries no rate (workload.min_timed_s): the judge says so
FULL_CIFAR_EPOCHS = Cifar10TorchConfig.epochs  # the workload's default (the record's 9.9): the study's 'full' tier
# b2/b3's goal: airbench94 trains 9.9 x 50,000 images in 3.83 s on an A100 (~129,000 images/s with its
# evaluation); at 708 MFLOPs per image (forward + backward, make bench-peer ARGS=--flops) 250,000 images/s on an
# H100 is 177 TFLOP/s, 18 % of its dense fp16 peak
CIFAR_GOAL_IMAGES_PER_S = 250_000
RECORD_FLOPS_PER_IMAGE = 708e6
CIFAR_TRAIN = 50_000  # images per epoch in check b (the real set's size; a synthetic stand-in of that size)
C1_FRAMEBUFFER_MiB = 2048  # an M60-2Q's


@dataclass(frozen=True)
class Check:
    id: str  # "b2"
    title: str
    expected: str  # the pass rule, as numbers
    run: Callable[[Context], Row]


CHECKS: dict[str, Check] = {}  # in the order they run: the order they are registered below


def check(id: str, title: str, expected: str) -> Callable[[Callable[[Context], Row]], Callable[[Context], Row]]:
    """Register a check where it is defined: its id, title, rule and place in the order (one edit adds one)."""
    def register(fn: Callable[[Context], Row]) -> Callable[[Context], Row]:
        if id in CHECKS:
            raise ValueError(f"gpu-check {id} is registered twice")
        CHECKS[id] = Check(id, title, expected, fn)
        return fn
    return register


@dataclass
class Row:
    check: str  # "b2"
    result: str  # ok | failed: why | skipped: why
    figure: str = ""
    data: JsonObject = field(default_factory=dict)

    @classmethod
    def of(cls, check: str, verdict: Verdict) -> "Row":
        return cls(check, verdict.result, verdict.figure, verdict.data)

    @property
    def title(self) -> str:
        return CHECKS[self.check].title

    @property
    def expected(self) -> str:
        return CHECKS[self.check].expected


class CheckFailed(RuntimeError):
    """A check ran and did not hold; its message is the row's reason."""


class CheckSkipped(RuntimeError):
    """A check that cannot run on this host; its message says why."""


class CheckInconclusive(RuntimeError):
    """A check this host could not judge (a rehearsal's check that ran out of time beside other load): its message
    says why; never a failure the device would not have."""


BUSY_PCT = 25.0  # other processes' CPU (% of a core) past which a rehearsal's late check is the host's fault


@dataclass
class Context:
    root: Path  # outputs/gpu-check/<time>/
    inv: Inventory
    data_root: str | None
    deadline: float  # monotonic: the campaign executor's or the check's share's end if sooner (campaign.action)
    say: Callable[[str], None]
    timings: dict[str, float] = field(default_factory=dict)  # "<workload>/<tier>" -> GPU seconds, for the study
    results: dict[str, JsonObject] = field(default_factory=dict)  # check -> its run's results.json
    timings_file: Callable[[], Path] | None = None  # writes what the checks so far measured, for the study (h)
    stand_in: StandIn | None = None  # make rehearse: the checks' workloads played at a device file's speeds

    share_end: float | None = None  # monotonic: when its share of the budget ends (campaign.action)

    @property
    def left_s(self) -> float:
        return self.deadline - time.monotonic()

    @property
    def share_s(self) -> float:
        """What is left of the check's share: what a command that plans (make size, make study) is given."""
        return min(self.share_end, self.deadline) - time.monotonic() if self.share_end is not None else self.left_s

    def played(self, argv: list[str]) -> list[str]:
        """A check's command line, with its workloads stood in for in a rehearsal (as it is otherwise)."""
        return self.stand_in.bench(argv) if self.stand_in is not None else argv




def run_logged(ctx: Context, name: str, argv: list[str], limit_s: float) -> subprocess.CompletedProcess[str]:
    """``argv`` in a process group of its own, with its output in ``<root>/logs/<name>.log``, within the time left;
    CheckFailed when it ran out. An interrupt stops the command as scancel would (SIGTERM to its group: it records
    its end and stops its guests; SIGKILL after campaign.costs' STOP_GRACE_S) and goes on up: no command outlives
    gpu-check."""
    timeout = min(limit_s, ctx.left_s)
    if timeout < 10:
        raise CheckSkipped(f"out of time ({max(ctx.left_s, 0):.0f} s left of its share of gpu-check's budget_s)")
    (ctx.root / "logs").mkdir(parents=True, exist_ok=True)
    log = ctx.root / "logs" / f"{name}.log"
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        busy = other_load(0.5) if ctx.stand_in is not None else None  # while its command still runs: not counted
        out, err = stop_group(proc)
        log.write_text(f"$ {' '.join(argv)}\n{out}\n{err}")
        if busy is not None and busy.other_pct > BUSY_PCT:  # a rehearsal is judged on the device's work
            raise CheckInconclusive(f"host busy ({busy.text()}): did not finish within {timeout:.0f} s on this host; "
                                    "its work on the device is its estimate") from None
        raise CheckFailed(f"did not finish within {timeout:.0f} s") from None
    except BaseException:
        out, err = stop_group(proc)
        log.write_text(f"$ {' '.join(argv)}\n{out}\n{err}\n(interrupted: stopped)")
        raise
    log.write_text(f"$ {' '.join(argv)}\n{out}\n{err}")
    return subprocess.CompletedProcess(argv, proc.returncode, out, err)


def store_args(ctx: Context) -> list[str]:
    """Where a check's command records: gpu-check's own store and artifacts (its runs nest under its run)."""
    return [f"tracking_uri=sqlite:///{ctx.root / 'mlflow.db'}", f"artifact_dir={ctx.root / 'mlartifacts'}"]


def bench(ctx: Context, name: str, overrides: list[str], limit_s: float = 240,
          expect: str = "results.json") -> JsonObject:
    """One ``python -m suites bench`` run into gpu-check's store; its results.json (a comparison: ``expect`` names
    the file it must have written, and {} is returned); CheckFailed without it."""
    run_dir = ctx.root / "runs" / name
    argv = [sys.executable, "-m", "suites", "bench", *ctx.played(overrides), "progress=quiet",
            f"hydra.run.dir={run_dir}", *store_args(ctx)]
    done = run_logged(ctx, name, argv, limit_s)
    if not (run_dir / expect).exists():
        errors = [ln for ln in done.stderr.splitlines() if ln.startswith("error:")]
        raise CheckFailed((errors or [f"exit {done.returncode}, no {expect}"])[-1] + f" (logs/{name}.log)")
    if expect != "results.json":
        return {}
    out: JsonObject = json.loads((run_dir / expect).read_text())
    ctx.results[name] = out
    return out


def sweep(ctx: Context, name: str, key: str, values: list[str], overrides: list[str],
          limit_s: float) -> dict[str, JsonObject]:
    """``python -m suites bench -m key=<each value>``: one command (one process start, imports and store) runs
    every point in turn, each still a run of its own with fresh guests; each value's results.json (CheckFailed where
    a point wrote none: the first such value and its log)."""
    sweep_dir = ctx.root / "runs" / name
    argv = [sys.executable, "-m", "suites", "bench", "-m", f"{key}={','.join(values)}", *ctx.played(overrides),
            "progress=quiet", f"hydra.sweep.dir={sweep_dir}", *store_args(ctx)]
    done = run_logged(ctx, name, argv, limit_s)
    out = {}
    for job, value in enumerate(values):  # Hydra's basic sweeper runs the points in order, job n in <dir>/<n>
        path = sweep_dir / str(job) / "results.json"
        if not path.exists():
            errors = [ln for ln in done.stderr.splitlines() if ln.startswith("error:")]
            raise CheckFailed(f"{key}={value}: " + (errors or [f"exit {done.returncode}, no results.json"])[-1]
                              + f" (logs/{name}.log)")
        out[value] = ctx.results[f"{name}-{value}"] = json.loads(path.read_text())
    return out


def require_ok(results: JsonObject) -> JsonObject:
    """The first guest, which must have finished ok and on its GPU."""
    why = judge.not_ok(results)
    if why:
        raise CheckFailed("; ".join(why))
    return guests(results)[0]


def synthetic(results: JsonObject) -> str:
    return " (synthetic data)" if results.get("data", {}).get("source") == "synthetic" else ""


# -- the checks, in the order they run -------------------------------------------------------------------------
@check("a", "inventory (gpu_probe)", "NVML names every GPU, its memory and the driver; MIG mode as set (read, "
       "never changed)")
def inventory(ctx: Context) -> Row:
    return Row.of("a", judge.inventory(ctx.inv.gpus, ctx.inv.driver_version))


# b1 times training to its target as MLPerf does: the accuracy checked at each epoch's end, the run ending at the first
# that reaches it, within a cap. One epoch, checked once, landed either side of 99 % (98.98 % and 99.22 % on an H200).
MNIST_MAX_EPOCHS = 3


@check("b1", "CUDA training: MNIST time to 99 %", f"test accuracy >= 99 % at an epoch's end within {MNIST_MAX_EPOCHS} "
       "epochs, its time_to_accuracy_s and epoch count reported (real MNIST)")
def mnist_time_to_accuracy(ctx: Context) -> Row:
    real = ctx.data_root and (Path(ctx.data_root) / "MNIST" / "raw" / "train-images-idx3-ubyte").exists()
    if not real and ctx.stand_in is None:  # a rehearsal's stand-in reads no data: as if the device call had it
        raise CheckSkipped(f"no real MNIST under data.root ({ctx.data_root or 'not given'})/MNIST/raw")
    res = bench(ctx, "b1-mnist", ["profile=passthrough-1gpu", "workload=mnist-torch",
                                  f"workload.epochs={MNIST_MAX_EPOCHS}", "workload.eval_each_epoch=true",
                                  "workload.target_accuracy=0.99", f"data.root={ctx.data_root}",
                                  "data.synthetic=false"])
    if not judge.not_ok(res):
        epochs = metric(guests(res)[0], "epochs_trained")  # the study's full tier trains the recipe's one epoch
        ctx.timings["mnist-torch/full"] = metric(guests(res)[0], "train_time_s") / (epochs if epochs >= 1 else 1.0)
    if ctx.stand_in is not None:  # a stand-in has no accuracy: its run and window are what a rehearsal judges
        return Row.of("b1", judge.played(res, "the accuracy (a stand-in learns nothing)"))
    return Row.of("b1", judge.mnist(res, 0.99, MNIST_MAX_EPOCHS))


def cifar_throughput(ctx: Context, compiled: bool) -> Row:
    name = "b3-cifar-compile" if compiled else "b2-cifar-eager"
    real = [f"data.root={ctx.data_root}"] if ctx.data_root else []
    # compiled: CUDA graphs too (reduce-overhead). Compiled alone, an H200's steps waited on the CPU's launches
    # (GPU util 64-79 %, CoV 3.7-5.3 %, 188,000-229,000 images/s); with graphs 287,000 images/s, CoV 0.05 %, 99 %
    mode = ["workload.compile_mode=reduce-overhead"] if compiled else []
    res = bench(ctx, name, ["profile=passthrough-1gpu", "workload=cifar10-torch", "workload.precision=fp16",
                            "workload.target_accuracy=null",  # throughput only: CIFAR_EPOCHS per repeat, no target
                            "workload.size_by=work",  # ... of that fixed work: the study's full tier is scaled from it
                            f"workload.epochs={CIFAR_EPOCHS}", f"workload.compile={str(compiled).lower()}", *mode,
                            f"workload.min_timed_s={CIFAR_MIN_WINDOW_S}",
                            "repeats=5", f"data.synthetic_train={CIFAR_TRAIN}", *real], limit_s=300)
    g = require_ok(res)
    # the study's full tier: 10 epochs over the images its GPU guests train: real CIFAR-10's 50,000, or a synthetic
    # stand-in of that size (run/plan.py data_for_device: a guest with a GPU never trains the CPU-sized 6,000)
    study_images = CIFAR_TRAIN
    ctx.timings["cifar10-torch/full"] = metric(g, "train_time_s") * FULL_CIFAR_EPOCHS / CIFAR_EPOCHS * \
        study_images / max(1, g["result"]["info"].get("train_images", CIFAR_TRAIN))
    # eager: a launch-bound rate is a finding, said; a rehearsal's stand-in has no GPU utilisation or energy
    verdict = judge.cifar(res, timing_judged=compiled, sampled=ctx.stand_in is None)
    rate = metric(g, "images_per_sec")
    met = "met" if rate >= CIFAR_GOAL_IMAGES_PER_S else "not met"
    verdict.figure += (f"; {rate * RECORD_FLOPS_PER_IMAGE / 1e12:.0f} TFLOP/s at 708 MFLOPs/img, goal "
                       f"{CIFAR_GOAL_IMAGES_PER_S:,} images/s {met}")
    warm = g["result"]["info"].get("warmup_untimed_s")
    verdict.figure += synthetic(res) + (f"; compile + warm-up {warm:.1f} s, untimed" if warm else "")
    return Row.of("b3" if compiled else "b2", verdict)


CIFAR_RULE = (f"images/s (goal >= {CIFAR_GOAL_IMAGES_PER_S:,}, shown, not judged), CoV <= "
              f"{judge.CIFAR_MAX_COV:.0%} over 5 repeats, GPU util >= "
              f"{judge.CIFAR_MIN_UTIL_PCT:.0f} %, energy > 0")


@check("b2", "CUDA training: CIFAR-10, the record's recipe in fp16, without torch.compile",
       "a rate over 5 repeats, energy > 0; CoV and GPU util shown beside b3's rule (eager steps wait on the CPU's "
       "kernel launches: a finding, not a failure)")
def cifar_eager(ctx: Context) -> Row:
    return cifar_throughput(ctx, False)


@check("b3", "CUDA training: CIFAR-10, the record's recipe in fp16, with torch.compile and CUDA graphs",
       f"as b2 ({CIFAR_RULE}); compile outside the timed "
       "region")
def cifar_compiled(ctx: Context) -> Row:
    return cifar_throughput(ctx, True)


@check("c1", "framebuffer caps: 4 x M60-2Q on one GPU, each filled to its cap",
       f"every guest's NVML GPU memory peak (context included) within [{judge.CAP_FILL[0]:.0%}, "
       f"{judge.CAP_FILL[1]:.0%}] of its {C1_FRAMEBUFFER_MiB} MiB")
def framebuffer_caps(ctx: Context) -> Row:
    res = bench(ctx, "c1-caps", ["profile=m60-2q", "scenario=concurrent", "scenario.guests=4",
                                 "workload=memory-fill"])
    return Row.of("c1", judge.caps(res, C1_FRAMEBUFFER_MiB))


@check("c2", "a guest past its cap (M60-1Q, batch 16384)", "the guest fails with 'framebuffer cap exceeded', not "
       "a bare CUDA OOM traceback")
def over_the_cap(ctx: Context) -> Row:
    # the images its step needs, no more: the guest is to fail at its batch of 16,384, not while loading 50,000
    res = bench(ctx, "c2-over-cap", ["profile=m60-1q", "workload=cifar10-torch", "workload.batch_size=16384",
                                     "workload.train_limit=16384", "workload.max_steps=3", "workload.warmup_steps=0"])
    return Row.of("c2", judge.over_cap(res))


@check("d", "per-guest GPU attribution (NVML pids -> guests)", "every guest of c1 holds GPU memory of its own "
       "processes (or the PID namespace mismatch is said)")
def attribution(ctx: Context) -> Row:
    res = ctx.results.get("c1-caps")
    if res is None:
        raise CheckSkipped("check c1 did not run")
    return Row.of("d", judge.attribution(res))


@check("e", "NVIDIA EGL: CAD guest on its own GPU", "renderer names NVIDIA; EGL device matched by UUID/PCI; every "
       "checked frame's pixels within workload.tolerance_pct of its reference")
def egl(ctx: Context) -> Row:
    problem = egldevice.nvidia_egl_problem() if ctx.inv.has_gpu else None
    if problem:  # only Mesa's llvmpipe would render: a CPU figure, and a misleading failure
        raise CheckSkipped(problem)
    res = bench(ctx, "e-egl", ["profile=m60-2q", "workload=graphics-replay", "+preset=smoke"])
    if not judge.not_ok(res):
        ctx.timings["graphics-replay/smoke"] = metric(guests(res)[0], vocab.RUN_TIME.key)
    return Row.of("e", judge.egl(res))


@check("f", "pycuda probe: bandwidth, FLOP/s", f"device bandwidth and FP32 FMA throughput each >= "
       f"{judge.DATASHEET_MIN:.0%} of the datasheet (gpu_probe/datasheet.py)")
def pycuda_probe(ctx: Context) -> Row:
    done = run_logged(ctx, "f-pycuda", [sys.executable, "-m", "gpu_probe", "probe"], 180)
    try:
        out = json.loads(done.stdout)
    except ValueError:
        raise CheckFailed(f"gpu_probe probe exited {done.returncode} (logs/f-pycuda.log)") from None
    if out.get("status") == "skipped":
        raise CheckSkipped(out.get("reason", "pycuda not built"))
    return Row.of("f", judge.probe(out, str(out.get("device") or ctx.inv.gpus[0].get("name", ""))))


@check("g", "MPS sharing: the whole GPU, one guest at 25 %, 4 x M60-2Q at 25 % each",
       f"FP32 FMA (cuda-probe): one guest at 25 % <= {judge.MPS_SHARE_SOLO_MAX:.2f} of the whole GPU; four "
       f"together within {judge.MPS_SUM_TOLERANCE:.0%} of it")
def mps_sharing(ctx: Context) -> Row:
    if shutil.which(CONTROL) is None:
        raise CheckSkipped(f"no MPS binary ({CONTROL} not on PATH)")
    problem = probe.unavailable()  # its guests run the cuda-probe workload: pycuda and nvcc, before any starts
    if problem:
        raise CheckSkipped(f"cuda-probe: {problem}")
    work = ["profile=m60-2q", "sharing=mps", "workload=cuda-probe"]  # FMA kernels over every SM: saturating
    full = bench(ctx, "g-mps-whole", [*work, "profile.mps_share_pct=100"])
    share = bench(ctx, "g-mps-share", work)
    four = bench(ctx, "g-mps-4", [*work, "scenario=concurrent", "scenario.guests=4"])
    return Row.of("g", judge.mps(full, share, four))


@check("h", "make study (full sizes where its share allows: its plan says) in its share of the budget",
       "study/<time>/report.html with episode 1 ratios and episode 2 "
       f"'{EMULATED}' rows, planned with the timings above; every part it ran finished")
def study(ctx: Context) -> Row:
    left = ctx.share_s - 20
    if left < 60:
        raise CheckSkipped(f"out of time ({ctx.share_s:.0f} s left of its share of gpu-check's budget_s)")
    timings = ctx.timings_file() if ctx.timings_file else ctx.root / "summary.json"
    argv = [sys.executable, "-m", "suites", "study", f"study.budget_s={left:.0f}", f"study.timings={timings}",
            "study.tier=auto", f"study.out_dir={ctx.root / 'study'}", *store_args(ctx),
            "progress=quiet",
            *([f"data.root={ctx.data_root}"] if ctx.data_root else [])]
    done = run_logged(ctx, "h-study", ctx.played(argv), left + 60)
    verdict = judge.study(done.returncode, done.stdout, done.stderr)
    verdict.figure += f"; budget {left:.0f} s"
    return Row.of("h", verdict)


def run_check(ctx: Context, check: str, fn: Callable[[], Row]) -> Row:
    """One check, whatever happens in it: its row."""
    ctx.say(f"gpu-check {check}: {CHECKS[check].title} ({max(ctx.share_s, 0):.0f} s of its share left)")
    try:
        return fn()
    except CheckSkipped as exc:
        return Row(check, f"{SKIPPED}: {exc}")
    except CheckFailed as exc:
        return Row(check, f"{FAILED}: {exc}")
    except CheckInconclusive as exc:
        return Row(check, f"{INCONCLUSIVE}: {exc}")
    except Exception as exc:  # the check's own fault: its row says so, the traceback goes to its log
        (ctx.root / "logs").mkdir(parents=True, exist_ok=True)
        (ctx.root / "logs" / f"{check}-fault.log").write_text(traceback.format_exc())
        return Row(check, f"{FAILED}: {type(exc).__name__}: {first_line(exc)} (logs/{check}-fault.log)")
