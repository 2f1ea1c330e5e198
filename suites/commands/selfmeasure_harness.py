"""``make bench-harness``: what the suite's own machinery costs around the work it times.

Each round runs one comparison through the real CLI (its own process, Hydra, the guests, the store), by default
issue 88's: ``scenario=gpu-vs-cpu`` with the ``fixed-step`` stand-in at a GPU's speed (a step a millisecond),
2 phases x 3 repeats, ``workload.min_window_s=1``. From outside it times the command's wall; from the comparison's
``harness.json`` (suites/run/harness.py) it takes the measured share (timed windows over the wall) and the cost per
repeat after the first (one window's end to the next one's start) with its parts. Beside them, this host's floors:
an empty Python process, one that imports torch (what a guest per repeat would pay without a preloaded one), and one
that imports MLflow's client and sqlite store (what the command pays before its store opens).

Each figure is a median with its min-max over its n; the goals (cost per repeat <= 0.5 s, the comparison <= 12 s)
are judged on the medians and said. A benchmark, not a test: nothing is recorded outside its throwaway store.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from gpu_probe.shapes import JsonObject
from gpu_probe.stats import summarize
from suites.pipeline.selfmeasure import REPO, RowFailed, bench_run
from suites.render import tables
from suites.run.harness import PARTS

GOAL_COST_S = 0.5  # cost per repeat after the first, median
GOAL_WALL_S = 12.0  # the whole comparison, median
COMPARISON = ["scenario=gpu-vs-cpu", "workload=fixed-step", "scenario.repeats=3"]
# what every recording command imports before its store opens (suites/record/store.py), with collection paused as
# it does (suites/process_gc.py: 4.0 s here without): the largest part of the comparison's start before its first window
MLFLOW = "import gc; gc.disable(); import mlflow.tracking, mlflow.store.tracking.sqlalchemy_store"


def parse(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="make bench-harness", description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3, help="comparisons run, one after another (default 3)")
    ap.add_argument("--step-ms", type=float, default=1.0, help="the stand-in's step (default 1 ms: a GPU's speed)")
    ap.add_argument("--window-s", type=float, default=1.0, help="workload.min_window_s (default 1)")
    args = ap.parse_args(argv)
    if not 1 <= args.rounds <= 20 or not 0 < args.step_ms <= 1000 or not 0.25 <= args.window_s <= 60:
        ap.error("--rounds must be 1..20, --step-ms in (0, 1000], --window-s in [0.25, 60]")
    return args


def floor_s(code: str, n: int) -> list[float]:
    """Wall seconds of ``n`` fresh Python processes running ``code`` (this interpreter, the repository's cwd)."""
    took = []
    for _ in range(n):
        t0 = time.perf_counter()
        done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True)
        if done.returncode != 0:
            return []
        took.append(time.perf_counter() - t0)
    return took


def one_round(args: argparse.Namespace, tmp: Path) -> tuple[float, JsonObject]:
    """One comparison through the CLI: (its wall from outside, its harness.json)."""
    t0 = time.perf_counter()
    doc, _ = bench_run("comparison", [*COMPARISON, f"workload.step_ms={args.step_ms:g}",
                                      f"workload.min_window_s={args.window_s:g}"], tmp, reads="harness.json")
    return time.perf_counter() - t0, doc


def spread(values: list[float], fmt: str = "{:.2f}") -> tuple[str, str, str]:
    """(median, min-max, n) as the table shows them; '-' where nothing was measured."""
    if not values:
        return "-", "-", "0"
    s = summarize(values)
    return fmt.format(s.median), f"{fmt.format(s.min)}-{fmt.format(s.max)}", str(s.n)


def table(walls: list[float], docs: list[dict[str, object]], floors: dict[str, list[float]]) -> Table:
    gaps = [float(g) for d in docs for g in d["cost_per_repeat_s"]]  # type: ignore[attr-defined]
    shares = [float(d["measured_share"]) * 100 for d in docs]  # type: ignore[arg-type]
    t = Table(title=f"harness: {' '.join(COMPARISON)}, {len(walls)} round(s)", title_justify="left")
    for col in ("figure", "median", "min-max", "n", "goal"):
        t.add_column(col, justify="left" if col in ("figure", "goal") else "right")
    goal_cost = judged(gaps, GOAL_COST_S)
    t.add_row("cost per repeat after the first (s)", *spread(gaps), f"<= {GOAL_COST_S:g}: {goal_cost}")
    for part in PARTS:
        each = [float(g.get(part, 0.0)) for d in docs for g in d["gaps"]]  # type: ignore[attr-defined]
        t.add_row(f"  {part} (s)", *spread(each), "")
    t.add_row("comparison's wall, from outside (s)", *spread(walls, "{:.1f}"), f"<= {GOAL_WALL_S:g}: "
              f"{judged(walls, GOAL_WALL_S)}")
    t.add_row("measured share (%)", *spread(shares, "{:.0f}"), "")
    t.add_row("first window after the start (s)", *spread([float(d["first_window_s"]) for d in docs],  # type: ignore[arg-type]
                                                          "{:.1f}"), "")
    for what, took in floors.items():
        t.add_row(f"floor: {what} (s)", *spread(took), "")
    return t


def judged(values: list[float], goal: float) -> str:
    if not values:
        return "not measured"
    median = statistics.median(values)
    return "met" if median <= goal else f"missed by {median - goal:.2f}"


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    out = Console(width=tables.console_width())
    floors = {"an empty Python process": floor_s("pass", 5),
              "a process that imports torch": floor_s("import torch", 3),
              "a process that imports MLflow": floor_s(MLFLOW, 3)}
    walls: list[float] = []
    docs: list[dict[str, object]] = []
    interrupted = False
    with tempfile.TemporaryDirectory(prefix="bench-harness-") as tmp:
        for i in range(args.rounds):
            try:
                wall, doc = one_round(args, Path(tmp))
            except RowFailed as exc:
                out.print(f"round {i + 1}/{args.rounds}: failed: {exc}", markup=False)
                return 1
            except KeyboardInterrupt:
                out.print(f"interrupted after {len(walls)} round(s): the rounds so far", markup=False)
                interrupted = True
                break
            walls.append(wall)
            docs.append(doc)
            out.print(f"round {i + 1}/{args.rounds}: {wall:.1f} s, measured share "
                      f"{float(doc['measured_share']):.0%}", markup=False)  # type: ignore[arg-type]
    out.print(table(walls, docs, floors))
    out.print("cost per repeat: one timed window's end to the next one's start (every repeat's gaps, all rounds); "
              "measured share: the timed windows over the command's wall so far (its process start to its harness "
              "line, before the comparison's own record); the floors: a fresh process each, wall from outside",
              markup=False, soft_wrap=False)
    return 130 if interrupted else 0 if walls else 1  # as make bench-ml: Ctrl-C exits 130, the rounds so far shown


if __name__ == "__main__":
    sys.exit(main())
