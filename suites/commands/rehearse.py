"""``make rehearse GPU=h200`` (``python -m suites rehearse --gpu h200 [--short]``): the GPU path played at GPU speed
on any host, before a GPU is lent.

Every test on a CPU host runs at CPU speed, where a replay lasts seconds, a step tens of milliseconds and a data set
fits any cap; on a GPU the same code met windows a tenth as long, replays shorter than the ML window and data sets
past a small profile's framebuffer. The rehearsal runs the suite's real planner, placement, sizing by time, mixed
scenario, study plan and ``make size`` plan with stand-ins that take the device's measured figures from its device
file (``configs/device/<gpu>.json``: step time per workload and batch, frame time per viewset, CUDA context,
memory; ``make gpu-check`` writes it anew from what it measured on each lent GPU):

- the ML guest is ``fixed-step`` at the device's step time; a comparison's slow arm at 10x it (the reference
  study's GPU-vs-CPU ratio), so its time ratio must come out as 10x of equal work;
- the CAD guest replays at 64x64 (a pass of a fraction of a second, as a viewset at the device's frame rate);
- each guest's data is its workload's bytes on the device (uint8 split, a chunk's temporaries) and the context;
- the study and the sizing are planned for one such GPU, with its seconds;
- ``make bench-ml``'s row for the ML stand-in has a rate on both sides over its window.

It prints one table (check, figure, target, result) and exits 1 on any miss. Nothing it prints is a measurement:
it is labelled ``rehearsal``, its runs go to a temporary store that is removed, and ``strict=true`` refuses it.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import math
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console
from rich.table import Table

from gpu_probe.inventory import Inventory
from gpu_probe.shapes import JsonObject
from suites.capacity.size_settings import load_settings
from suites.commands import selfmeasure_ml
from suites.config.overrides import override
from suites.config.schema import register_configs
from suites.errors import ConfigError
from suites.gpucheck import device_file
from suites.render import tables
from suites.sizing.parts import plan_parts
from suites.study.planner import Measured, plan_study
from suites.study.settings import StudySettings
from suites.workloads.device_bytes import UNSEEN_SHARE, mnist_torch_peak_MiB

REPO = Path(__file__).resolve().parents[2]
MIN_OVERLAP_PCT = 90.0
RATIO_TOLERANCE = 0.2  # a time ratio of equal work within 20 % of the step-time ratio
SLOW_ARM = 10.0  # the comparison's slow arm: the reference study's GPU-vs-CPU ratio (10.06x)
# Profiles the study and gpu-check put an MNIST guest in: (name, framebuffer MiB; None: the whole card)
PROFILES = (("m60-8q", 8192), ("m60-4q", 4096), ("m60-2q", 2048), ("m60-1q", 1024), ("passthrough-1gpu", None))


@dataclass
class Check:
    name: str
    figure: str
    target: str
    ok: bool


# --- the judges: one per check, pure ----------------------------------------------------------------------------
def judge_ratio(time_x: float, basis: str) -> Check:
    ok = basis == "time per image" and abs(time_x / SLOW_ARM - 1) <= RATIO_TOLERANCE
    return Check("time ratio of equal work", f"{time_x:.2f}x ({basis})", f"{SLOW_ARM:g}x +/- 20 %, time per image",
                 ok)


def judge_window(guest: str, timed_s: float, floor_s: float) -> Check:
    """A rate's timed window against its floor; NaN (no rate) misses."""
    figure = f"{timed_s:.2f} s" if timed_s == timed_s else "no rate"
    return Check(f"rate window: {guest}", figure, f">= {floor_s:g} s", timed_s >= floor_s)


def judge_overlap(overlap_pct: float, passes: int) -> Check:
    ok = overlap_pct >= MIN_OVERLAP_PCT
    return Check("mixed overlap", f"{overlap_pct:.0f} % (CAD replayed {passes} pass(es))", f">= {MIN_OVERLAP_PCT:g} %",
                 ok)


def judge_memory(profile: str, context_MiB: float, tensors_MiB: float, cap_MiB: float) -> Check:
    """A guest's context and counted tensors against its cap less the part of its share a count does not see
    (cuDNN's workspaces, the allocator's blocks: :data:`suites.workloads.device_bytes.UNSEEN_SHARE`)."""
    room = context_MiB + (cap_MiB - context_MiB) * (1 - UNSEEN_SHARE)
    need = context_MiB + tensors_MiB
    return Check(f"memory within cap: {profile}", f"{need:,.0f} = {context_MiB:,.0f} + {tensors_MiB:,.0f} MiB",
                 f"<= {room:,.0f} MiB (cap {cap_MiB:,.0f})", need <= room)


def judge_budget(what: str, estimate_s: float, budget_s: float, detail: str = "") -> Check:
    return Check(f"{what} within budget", f"{estimate_s:.0f} s{detail}", f"<= {budget_s:g} s", estimate_s <= budget_s)


# --- what each check plays --------------------------------------------------------------------------------------
def data_checks(dev: JsonObject, tensors_MiB: float) -> list[Check]:
    """mnist-torch with all 60,000 images in each profile the study and gpu-check give it: the device file's CUDA
    context and ``tensors_MiB`` (:func:`suites.workloads.device_bytes.mnist_torch_peak_MiB`: data, a training step,
    the evaluation; before it counted the data alone, 817 MiB of m60-1q's 1,024, and the H200 stopped the guest)."""
    context = float(dev["cuda_context_MiB"])
    return [judge_memory(name, context, tensors_MiB, float(fb if fb is not None else dev["mem_total_MiB"]))
            for name, fb in PROFILES]


def floor_s(short: bool) -> float:
    """The window a rate needs: the smoke preset's 0.5 s, else workload.min_window_s's 2 s."""
    return 0.5 if short else 2.0


def bench(tmp: Path, name: str, *overrides: str) -> Path:
    """One bench run into ``tmp`` (its own store, removed with ``tmp``): its folder."""
    run_dir = tmp / name
    cmd = [sys.executable, "-m", "suites", "bench", "progress=quiet", f"tracking_uri=sqlite:///{tmp / 'rehearsal.db'}",
           f"artifact_dir={tmp / 'artifacts'}", f"data.cache_dir={tmp / 'data'}", f"hydra.run.dir={run_dir}",
           *overrides]
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "BENCH_DATA_ROOT": str(tmp / "no-data")})
    if proc.returncode not in (0, 1):
        raise RuntimeError(f"{name}: exit {proc.returncode}: {(proc.stderr.strip().splitlines() or ['?'])[-1]}")
    return run_dir


def equal_work(dev: JsonObject, tmp: Path, short: bool) -> list[Check]:
    step = device_file.step_ms(dev, "mnist-torch", 512)
    phases = (f"scenario.phases=[{{label:gpu,overrides:['workload.step_ms={step:g}']}},"
              f"{{label:slow,overrides:['workload.step_ms={step * SLOW_ARM:g}']}}]")
    run_dir = bench(tmp, "equal-work", "scenario=gpu-vs-cpu", "workload=fixed-step", "workload.batch_size=512",
                       *(["+preset=smoke"] if short else []), phases, "scenario.baseline=gpu")
    rows = {r["label"]: r for r in csv.DictReader((run_dir / "comparison.csv").open())}
    checks = [judge_ratio(float(rows["slow"]["time_x"]), rows["slow"]["time_basis"])]
    for path in sorted(run_dir.glob("*/results.json")):  # each phase's run (a repeat's folder too)
        checks += windows(json.loads(path.read_text()), path.parent.name, floor_s(short))
    return checks


def windows(res: JsonObject, label: str, floor_s: float) -> list[Check]:
    out = []
    for g in res.get("guests", []):
        m = g["result"].get("metrics", {})
        if m.get("images_per_sec", math.nan) == m.get("images_per_sec", math.nan) and "timed_s" in m:
            out.append(judge_window(f"{label} {g['spec']['guest_id']}", float(m["timed_s"]), floor_s))
    return out


def mixed(dev: JsonObject, tmp: Path, short: bool) -> list[Check]:
    step = device_file.step_ms(dev, "mnist-torch", 512) * 128 / 512  # the mixed ML guest's batch of 128, by throughput
    window = floor_s(short)
    ml = override("scenario.mixed.ml.overrides", [
        override("workload.step_ms", float(f"{step:.3g}")), override("workload.batch_size", 128),
        override("workload.min_window_s", float(f"{window:g}")), override("workload.until_stopped", True)])
    cad_line = override("scenario.mixed.cad.overrides", [override("workload.frames_per_test", 4),
                                                         override("workload.resolution", [64, 64])])
    run_dir = bench(tmp, "mixed", "scenario=mixed", "scenario.mixed.ml.workload=fixed-step", ml, cad_line,
                    "profile=m60-8q", "profile.memory_MiB=2048", "scenario.repeats=1")
    phase = json.loads((run_dir / "m60-8q-mixed" / "results.json").read_text())
    cad = next(g for g in phase["guests"] if g["spec"]["workload"] == "graphics-replay")
    checks = [judge_overlap(float(phase["host_metrics"].get("overlap_pct", math.nan)),
                            int(cad["result"]["info"].get("replay_passes", 1)))]
    return checks + windows(phase, "mixed", window)


def bench_ml(dev: JsonObject, tmp: Path, short: bool) -> list[Check]:
    """make bench-ml's row for the ML stand-in at the device's step time: a rate on both sides, over its window."""
    step = device_file.step_ms(dev, "mnist-torch", 512)
    window = floor_s(short)
    row = selfmeasure_ml.measure("fixed-step", [f"workload.step_ms={step:g}", "workload.batch_size=512",
                                                f"workload.min_window_s={window:g}", "profile.vcpus=1"],
                                 1, tmp, Console(file=io.StringIO()), 1)
    cells = dict(zip(selfmeasure_ml.COLUMNS, row, strict=True))
    seconds = float(cells["timed window"].split(" s,")[0]) if " s," in cells["timed window"] else math.nan
    rated = cells["guest images/s"] != "-" and cells["bare images/s"] != "-"
    return [judge_window("bench-ml fixed-step", seconds if rated else math.nan, window)]


def study_plan(dev: JsonObject) -> Check:
    work = {tuple(k.split("/", 1)): float(v) for k, v in dev.get("work_s", {}).items()}
    settings = StudySettings()
    sp = plan_study(1, {"tensorflow": "not in a GPU host's wheels"}, settings, Measured(gpu_work=work))  # type: ignore[arg-type]
    return judge_budget("study plan", sp.estimate_s, settings.budget_s, f", {len(sp.parts)} part(s), {sp.tier}")


def sizing_plan(dev: JsonObject, tmp: Path) -> Check:
    inv = Inventory("rehearsal", "Linux", "3.12", "cpu", 16, 16, 16, 131072.0,
                    gpus=[{"index": 0, "name": dev["gpu"], "uuid": "GPU-rehearsal",
                           "mem_total_MiB": float(dev["mem_total_MiB"])}])
    settings = load_settings("default", [])
    plan = plan_parts(settings, inv, [f"tracking_uri=sqlite:///{tmp / 'sizing.db'}"], Console(file=io.StringIO()))
    trims = f", {len(plan.parts)} consolidation(s), {len(plan.fitted.trims)} trim(s)"
    return judge_budget("make size plan", plan.fitted.estimate_s, settings.budget_s, trims)


def run_checks(dev: JsonObject, short: bool, out: Console) -> list[Check]:
    out.print("rehearse: counting mnist-torch's tensors under m60-1q's cap ...", highlight=False)
    checks = data_checks(dev, mnist_torch_peak_MiB(framebuffer_MiB=1024)) + [study_plan(dev)]
    with tempfile.TemporaryDirectory(prefix="rehearsal-") as tmp:
        checks.append(sizing_plan(dev, Path(tmp)))
        for what, play in (("a comparison of equal work", equal_work), ("a mixed run", mixed),
                           ("make bench-ml", bench_ml)):
            out.print(f"rehearse: {what} at {dev['gpu']} speed ...", highlight=False)
            try:
                checks += play(dev, Path(tmp), short)
            except (RuntimeError, OSError, KeyError, ValueError, subprocess.TimeoutExpired) as exc:
                checks.append(Check(what, f"did not run: {exc}", "runs", False))
    return checks


def show(checks: list[Check], dev: JsonObject, out: Console) -> None:
    t = Table(title=f"rehearsal at {dev['gpu']} speed: NOT A MEASUREMENT (stand-ins at its figures; nothing "
              "recorded)", title_justify="left", caption_justify="left",
              caption=f"memory: the CUDA context + mnist-torch's tensors counted on this host; room: the context + "
              f"{1 - UNSEEN_SHARE:.0%} of the rest of the cap (cuDNN's workspaces and the allocator's blocks are not "
              f"counted)\ndevice file: {dev.get('source', '?')}")
    for col in ("check", "figure", "target", "result"):
        t.add_column(col, overflow="fold")
    for c in checks:
        t.add_row(c.name, c.figure, c.target, "ok" if c.ok else "[red]MISSED[/red]")
    out.print(t)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m suites rehearse", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--gpu", default="h200", help="h200, h100, or a device file (.json)")
    parser.add_argument("--short", action="store_true", help="smoke sizes: the form make test runs")
    args, rest = parser.parse_known_args(argv)
    if any(a.replace(" ", "").lower() in ("strict=true", "strict=1") for a in rest):
        print("error: strict=true: a rehearsal is no measurement (stand-ins at a device's figures); run the suite "
              "on the GPU itself", file=sys.stderr)
        return 2
    if rest:
        print(f"error: unknown argument(s) {' '.join(rest)}", file=sys.stderr)
        return 2
    register_configs()
    try:
        dev = device_file.load(args.gpu)
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    out = Console(width=tables.console_width())
    try:
        checks = run_checks(dev, args.short, out)
    except KeyboardInterrupt:  # its runs were in a temporary store, removed: nothing of it is left or recorded
        print("rehearse: interrupted; nothing was recorded (its runs' temporary store is removed)", file=sys.stderr)
        return 130
    show(checks, dev, out)
    missed = [c.name for c in checks if not c.ok]
    out.print(f"rehearse: {len(checks) - len(missed)} of {len(checks)} checks ok" +
              (f"; missed: {', '.join(missed)}" if missed else ""), highlight=False)
    return 1 if missed else 0


if __name__ == "__main__":
    raise SystemExit(main())
