"""The checks of ``make gpu-check``: every GPU-only path of the suite run once, each with its figure and what it
should be. A check runs the suite's own commands (``python -m suites.app.bench``, ``suites.app.study``,
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
from typing import Any

from gpu_probe import vocab
from gpu_probe.inventory import Inventory
from gpu_probe.stats import summarize
from suites.backends.mps import CONTROL
from suites.data.config import DataConfig
from suites.errors import first_line

OK, FAILED, SKIPPED = "ok", "failed", "skipped"
CIFAR_EPOCHS = 2  # per repeat in check b: enough steady steps for images/s; the planner scales to 10
FULL_CIFAR_EPOCHS = 10  # the workload's default: what the study's 'full' tier runs
CIFAR_TRAIN = 50_000  # images per epoch in check b (the real set's size; a synthetic stand-in of that size)


TITLES = {"a": "inventory (gpu_probe)", "b1": "CUDA training: MNIST time to 99 %",
          "b2": "CUDA training: CIFAR-10 bf16 without torch.compile",
          "b3": "CUDA training: CIFAR-10 bf16 with torch.compile", "c1": "framebuffer caps: 4 x M60-2Q on one GPU",
          "c2": "a guest past its cap (M60-1Q, batch 16384)", "d": "per-guest GPU attribution (NVML pids -> guests)",
          "e": "NVIDIA EGL: CAD guest on its own GPU", "f": "pycuda probe: bandwidth, FLOP/s",
          "g": "MPS sharing: 4 x M60-2Q at 25 % each", "h": "make study in the time left"}
EXPECTED = {"a": "NVML answers; MIG mode as set (read, never changed)",
            "b1": "test accuracy >= 99 %, time_to_accuracy_s reported (real MNIST)",
            "b2": "images/s (goal >= 250,000), CoV <= 2 % over 5 repeats, GPU util >= 90 %, energy > 0",
            "b3": "as b2; compile outside the timed region",
            "c1": "every guest's NVML GPU memory max <= 2048 MiB",
            "c2": "the guest fails with 'framebuffer cap exceeded', not a bare CUDA OOM traceback",
            "d": "every guest holds GPU memory and SM % of its own processes (or the namespace mismatch is said)",
            "e": "renderer names NVIDIA; EGL device matched by UUID/PCI; pixels within workload.tolerance_pct",
            "f": "device bandwidth and FMA throughput near the datasheet",
            "g": "each guest's images/s / solo near its promised share; every guest ok",
            "h": "report.html with episode 1 ratios and episode 2 'emulated' rows, planned with the timings above"}


@dataclass
class Row:
    check: str  # "b2"
    result: str  # ok | failed: why | skipped: why
    figure: str = ""
    data: dict[str, Any] = field(default_factory=dict)

    @property
    def title(self) -> str:
        return TITLES[self.check]

    @property
    def expected(self) -> str:
        return EXPECTED[self.check]


class CheckFailed(RuntimeError):
    """A check ran and did not hold; its message is the row's reason."""


class CheckSkipped(RuntimeError):
    """A check that cannot run on this host; its message says why."""


@dataclass
class Context:
    root: Path  # outputs/gpu-check/<time>/
    inv: Inventory
    data_root: str | None
    deadline: float  # monotonic
    say: Callable[[str], None]
    timings: dict[str, float] = field(default_factory=dict)  # "<workload>/<tier>" -> GPU seconds, for the study
    results: dict[str, dict[str, Any]] = field(default_factory=dict)  # check -> its run's results.json

    @property
    def left_s(self) -> float:
        return self.deadline - time.monotonic()


def run_logged(ctx: Context, name: str, argv: list[str], limit_s: float) -> subprocess.CompletedProcess[str]:
    """``argv`` with its output in ``<root>/logs/<name>.log``, within the time left; CheckFailed when it ran out."""
    timeout = min(limit_s, ctx.left_s)
    if timeout < 10:
        raise CheckSkipped(f"out of time (gpu-check budget_s spent, {max(ctx.left_s, 0):.0f} s left)")
    (ctx.root / "logs").mkdir(parents=True, exist_ok=True)
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        out = (exc.stdout or b"").decode(errors="replace") if isinstance(exc.stdout, bytes) else exc.stdout or ""
        (ctx.root / "logs" / f"{name}.log").write_text(out)
        raise CheckFailed(f"did not finish within {timeout:.0f} s") from None
    (ctx.root / "logs" / f"{name}.log").write_text(f"$ {' '.join(argv)}\n{done.stdout}\n{done.stderr}")
    return done


def bench(ctx: Context, name: str, overrides: list[str], limit_s: float = 240) -> dict[str, Any]:
    """One ``suites.app.bench`` run into the check's own store; its results.json (CheckFailed without one)."""
    run_dir = ctx.root / "runs" / name
    argv = [sys.executable, "-m", "suites.app.bench", *overrides, "progress=quiet", f"hydra.run.dir={run_dir}",
            f"tracking_uri=sqlite:///{ctx.root / 'mlflow.db'}", f"artifact_dir={ctx.root / 'mlartifacts'}"]
    done = run_logged(ctx, name, argv, limit_s)
    results = run_dir / "results.json"
    if not results.exists():
        errors = [ln for ln in done.stderr.splitlines() if ln.startswith("error:")]
        raise CheckFailed((errors or [f"exit {done.returncode}, no results.json"])[-1] + f" (logs/{name}.log)")
    out: dict[str, Any] = json.loads(results.read_text())
    ctx.results[name] = out
    return out


def guests(results: dict[str, Any]) -> list[dict[str, Any]]:
    return results.get("guests", [])


def metric(guest: dict[str, Any], key: str) -> float:
    value = guest["result"]["metrics"].get(key)
    return float(value) if isinstance(value, (int, float)) else float("nan")


def require_ok(results: dict[str, Any]) -> dict[str, Any]:
    """The first guest, which must have finished ok and on its GPU."""
    g = guests(results)[0]
    if g["result"]["status"] != "ok":
        raise CheckFailed(f"guest {g['result']['guest_id']}: {g['result']['error']}")
    if g["result"]["info"].get("device") == "cpu":
        raise CheckFailed("trained on the CPU although the profile gave it a GPU")
    return g


def synthetic(results: dict[str, Any]) -> str:
    return " (synthetic data)" if results.get("data", {}).get("source") == "synthetic" else ""


# -- the checks, in order ---------------------------------------------------------------------------------------
def inventory(ctx: Context) -> Row:
    g = ctx.inv.gpus[0]
    mem = g.get(vocab.GPU_MEM_TOTAL.key)
    figure = (f"{len(ctx.inv.gpus)} x {g.get('name')}, driver {ctx.inv.driver_version}, CUDA "
              f"{ctx.inv.cuda_driver_version}, {mem:.0f} MiB, MIG {g.get('mig_mode') or 'n/a'}, "
              f"virtualization {g.get('virtualization_mode') or 'n/a'}" if isinstance(mem, (int, float)) else str(g))
    return Row("a", OK, figure, {"gpus": ctx.inv.gpus, "driver": ctx.inv.driver_version,
                                 "cuda": ctx.inv.cuda_driver_version})


def mnist_time_to_accuracy(ctx: Context) -> Row:
    if not ctx.data_root or not (Path(ctx.data_root) / "MNIST" / "raw" / "train-images-idx3-ubyte").exists():
        raise CheckSkipped(f"no real MNIST under data.root ({ctx.data_root or 'not given'})/MNIST/raw")
    res = bench(ctx, "b1-mnist", ["profile=passthrough-1gpu", "workload=mnist-torch", "workload.epochs=5",
                                  "workload.target_accuracy=0.99", f"data.root={ctx.data_root}",
                                  "data.synthetic=false"])
    g = require_ok(res)
    acc, tta = metric(g, "test_accuracy"), metric(g, "time_to_accuracy_s")
    ctx.timings["mnist-torch/full"] = metric(g, "train_time_s")
    figure = f"{tta:.2f} s to {acc:.2%}, {metric(g, 'images_per_sec'):,.0f} images/s on {g['result']['info']['device']}"
    result = OK if acc >= 0.99 else f"{FAILED}: reached {acc:.2%}"
    return Row("b1", result, figure, {"metrics": g["result"]["metrics"]})


def cifar_throughput(ctx: Context, compiled: bool) -> Row:
    name = "b3-cifar-compile" if compiled else "b2-cifar-eager"
    real = [f"data.root={ctx.data_root}"] if ctx.data_root else []
    res = bench(ctx, name, ["profile=passthrough-1gpu", "workload=cifar10-torch", "workload.precision=bf16",
                            f"workload.epochs={CIFAR_EPOCHS}", f"workload.compile={str(compiled).lower()}",
                            "repeats=5", f"data.synthetic_train={CIFAR_TRAIN}", *real], limit_s=300)
    g = require_ok(res)
    rates = [r["images_per_sec"] for r in g["result"]["repeats"]] or [metric(g, "images_per_sec")]
    s = summarize(rates)
    host = res.get("host_metrics", {})
    util, energy = host.get("gpu0.util_pct.mean", float("nan")), host.get(vocab.ENERGY.key, float("nan"))
    images = sum(r.get("images", 0.0) for r in g["result"]["repeats"]) or metric(g, "images")
    # the study's full tier: 10 epochs over the images it will have (real CIFAR-10, else the default synthetic set)
    study_images = CIFAR_TRAIN if res.get("data", {}).get("source") != "synthetic" else DataConfig().synthetic_train
    ctx.timings["cifar10-torch/full"] = metric(g, "train_time_s") * FULL_CIFAR_EPOCHS / CIFAR_EPOCHS * \
        study_images / max(1, g["result"]["info"].get("train_images", CIFAR_TRAIN))
    warm = g["result"]["info"].get("warmup_untimed_s")
    figure = (f"{s.median:,.0f} images/s median of {s.n}, CoV {s.cov:.1%}; GPU util {util:.0f} %; "
              f"{energy:,.0f} J, {images / energy if energy == energy and energy > 0 else float('nan'):,.0f} "
              f"images/J (whole run){synthetic(res)}" + (f"; compile + warm-up {warm:.1f} s, untimed" if warm else ""))
    missed = [x for x in (f"CoV {s.cov:.1%} > 2 %" if not s.cov <= 0.02 else "",
                          f"util {util:.0f} % < 90 %" if not util >= 90 else "") if x]
    return Row("b3" if compiled else "b2", f"{FAILED}: {', '.join(missed)}" if missed else OK, figure,
               {"images_per_sec": rates, "median": s.median, "cov": s.cov, "util_pct": util, "energy_J": energy})


def framebuffer_caps(ctx: Context) -> Row:
    res = bench(ctx, "c1-caps", ["profile=m60-2q", "scenario=concurrent", "scenario.guests=4", "workload=mnist-torch"])
    cap = 2048
    rows = []
    for g in guests(res):
        gid, peak = g["result"]["guest_id"], g["sampled"].get(f"{vocab.GUEST_GPU_MEM.key}.max", float("nan"))
        if g["result"]["status"] != "ok":
            raise CheckFailed(f"guest {gid}: {g['result']['error']}")
        rows.append((gid, peak, g["result"]["info"].get("framebuffer_cap")))
    over = [f"{gid} {peak:.0f} MiB" for gid, peak, _ in rows if not peak <= cap]
    figure = ", ".join(f"{gid} {peak:.0f} MiB" for gid, peak, _ in rows) + f" (cap {rows[0][2]})"
    result = OK if not over else f"{FAILED}: over or unmeasured: {', '.join(over)}"
    return Row("c1", result, figure, {"peaks_MiB": {r[0]: r[1] for r in rows}})


def over_the_cap(ctx: Context) -> Row:
    res = bench(ctx, "c2-over-cap", ["profile=m60-1q", "workload=cifar10-torch", "workload.batch_size=16384",
                                     "workload.max_steps=3", "workload.warmup_steps=0"])
    g = guests(res)[0]
    error = g["result"]["error"] or ""
    result = OK if g["result"]["status"] == "failed" and error.startswith("framebuffer cap exceeded") else \
        f"{FAILED}: guest {g['result']['status']}: {error[:120] or 'no error'}"
    return Row("c2", result, error[:160])


def attribution(ctx: Context) -> Row:
    res = ctx.results.get("c1-caps")
    if res is None:
        raise CheckSkipped("check c1 did not run")
    notes = res.get("sampler", {}).get("notes", [])
    if notes:
        return Row("d", f"{SKIPPED}: {notes[0]}")
    seen = {g["result"]["guest_id"]: (g["sampled"].get(f"{vocab.GUEST_GPU_MEM.key}.max", 0.0),
                                      g["sampled"].get(f"{vocab.GUEST_GPU_UTIL.key}.mean", float("nan")))
            for g in guests(res)}
    missing = [gid for gid, (mem, _) in seen.items() if not mem > 0]
    figure = ", ".join(f"{gid}: {mem:.0f} MiB, SM {util:.0f} %" for gid, (mem, util) in seen.items())
    result = OK if not missing else f"{FAILED}: no GPU memory attributed to {', '.join(missing)}"
    return Row("d", result, figure, {"guests": seen})


def egl(ctx: Context) -> Row:
    res = bench(ctx, "e-egl", ["profile=m60-2q", "workload=graphics-replay", "+preset=smoke"])
    g = guests(res)[0]
    info = g["result"]["info"]
    if g["result"]["status"] != "ok":
        raise CheckFailed(f"guest: {g['result']['error']}")
    renderer, pixels = str(info.get("renderer", "?")), metric(g, vocab.PIXELS_OK.key)
    ctx.timings["graphics-replay/smoke"] = metric(g, vocab.RUN_TIME.key)
    figure = (f"{renderer}; {info.get('egl_device', '?')}; composite {metric(g, vocab.COMPOSITE.key):,.0f} fps; "
              f"pixels {'match' if pixels == 1 else 'differ from the references'}")
    software = any(s in renderer.lower() for s in ("llvmpipe", "softpipe", "swrast"))
    result = f"{FAILED}: software renderer (NVIDIA EGL vendor file not found?)" if software else OK
    return Row("e", result, figure, {"info": info})


def pycuda_probe(ctx: Context) -> Row:
    done = run_logged(ctx, "f-pycuda", [sys.executable, "-m", "gpu_probe", "probe"], 180)
    try:
        out = json.loads(done.stdout)
    except ValueError:
        raise CheckFailed(f"gpu_probe probe exited {done.returncode} (logs/f-pycuda.log)") from None
    if out.get("status") == "skipped":
        raise CheckSkipped(out.get("reason", "pycuda not built"))
    figure = ", ".join(f"{k} {v:,.0f}" for k, v in out.items() if isinstance(v, (int, float)))[:200]
    return Row("f", OK if out.get("status") == "ok" else FAILED, figure, out)


def mps_sharing(ctx: Context) -> Row:
    if shutil.which(CONTROL) is None:
        raise CheckSkipped(f"no MPS binary ({CONTROL} not on PATH)")
    work = ["profile=m60-2q", "sharing=mps", "workload=cifar10-torch", "workload.batch_size=256",
            "workload.max_steps=200"]
    solo = require_ok(bench(ctx, "g-mps-solo", work))
    four = bench(ctx, "g-mps-4", [*work, "scenario=concurrent", "scenario.guests=4"])
    base = metric(solo, "images_per_sec")
    shares = {}
    for g in guests(four):
        if g["result"]["status"] != "ok":
            raise CheckFailed(f"guest {g['result']['guest_id']}: {g['result']['error']}")
        shares[g["result"]["guest_id"]] = metric(g, "images_per_sec") / base
    promised = guests(four)[0]["result"]["info"].get("mps_active_thread_pct", "?")
    figure = ", ".join(f"{gid} {s:.0%}" for gid, s in shares.items()) + f" of solo {base:,.0f} images/s; " \
        f"promised {promised} % of SMs each"
    return Row("g", OK, figure, {"shares": shares, "solo_images_per_sec": base, "promised_pct": promised})


def study(ctx: Context, timings_file: Path) -> Row:
    left = ctx.left_s - 20
    if left < 60:
        raise CheckSkipped(f"out of time ({ctx.left_s:.0f} s left of the gpu-check budget)")
    argv = [sys.executable, "-m", "suites.app.study", f"study.budget_s={left:.0f}", f"study.timings={timings_file}",
            f"study.out_dir={ctx.root / 'study'}", f"tracking_uri=sqlite:///{ctx.root / 'mlflow.db'}",
            f"artifact_dir={ctx.root / 'mlartifacts'}", "progress=quiet",
            *([f"data.root={ctx.data_root}"] if ctx.data_root else [])]
    done = run_logged(ctx, "h-study", argv, left + 60)
    report = [ln for ln in done.stdout.splitlines() if ln.startswith("study: ") and "report.html" in ln]
    if done.returncode not in (0, 1) or not report:
        errors = [ln for ln in done.stderr.splitlines() if ln.startswith("error:")]
        raise CheckFailed((errors or [f"exit {done.returncode}"])[-1] + " (logs/h-study.log)")
    return Row("h", OK if done.returncode == 0 else f"{FAILED}: a part failed (exit 1)",
               f"{report[-1][len('study: '):]}; budget {left:.0f} s")


def run_check(ctx: Context, check: str, fn: Callable[[], Row]) -> Row:
    """One check, whatever happens in it: its row."""
    ctx.say(f"gpu-check {check}: {TITLES[check]} ({max(ctx.left_s, 0):.0f} s left)")
    try:
        return fn()
    except CheckSkipped as exc:
        return Row(check, f"{SKIPPED}: {exc}")
    except CheckFailed as exc:
        return Row(check, f"{FAILED}: {exc}")
    except Exception as exc:  # the check's own fault: its row says so, the traceback goes to its log
        (ctx.root / "logs").mkdir(parents=True, exist_ok=True)
        (ctx.root / "logs" / f"{check}-fault.log").write_text(traceback.format_exc())
        return Row(check, f"{FAILED}: {type(exc).__name__}: {first_line(exc)} (logs/{check}-fault.log)")
