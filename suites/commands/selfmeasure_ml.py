"""``make bench-ml``: what the suite's machinery costs a training workload.

For each workload, rounds alternate: one guest through the real CLI (its own
process, start barrier, sampler, JSON-lines protocol, MLflow), then the same
workload in a fresh bare process: the same plugin, data, model, thread settings
and cores, its own training loop and step meter (so the data path and the timed
window are the guest's), and none of the harness. The ratio of round i is the
guest's images/s over the bare process's; the table gives the median ratio, the
95 % CI of the per-round ratios and a verdict: ``overhead`` when the CI lies below
1, ``within noise`` when it spans 1 (goal: ratio >= 0.97). Where the host has more
than two cores, the guest gets one fewer than the host so the runner and its
sampler have a core of their own; on two cores they compete with the guest, and
the table says so.

Each workload's row is printed as it finishes and kept: a workload whose framework is not installed (TensorFlow
on a GPU host's bare image) is skipped with that reason, and one whose run fails says why in its row while the
others go on; an interrupt prints the rows measured so far.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from rich.console import Console
from rich.table import Table

from gpu_probe.shapes import JsonObject
from gpu_probe.stats import (
    Interval,
    goal,
    ratio_interval,
    verdict,
)
from suites.guest.protocol import GuestSpec
from suites.guest.setup import apply_resources, environment, make_workload
from suites.pipeline.selfmeasure import REPO, VERDICTS, RowFailed, bench_run, host_cores, why_failed
from suites.render import tables
from suites.render.fit import fit
from suites.workloads import list_workloads, workload_class
from suites.workloads.timing import StepMeter

# Throughput runs (no accuracy target), sized by time: each timed window lasts workload.min_window_s (2 s) on this
# host's CPU as on a GPU, so every row has a rate; the data sizes keep a CPU host's memory and set-up small.
THROUGHPUT = ["workload.target_accuracy=null"]
DEFAULTS = {
    "mnist-torch": [*THROUGHPUT, "data.synthetic_train=12800", "workload.train_limit=12800"],
    "cifar10-torch": [*THROUGHPUT, "workload.width=16", "workload.batch_size=256", "workload.train_limit=10240",
                      "data.synthetic_train=10240", "workload.warmup_steps=3", "workload.lr=0.02"],
    "mnist-tf": [*THROUGHPUT, "data.synthetic_train=12800", "workload.train_limit=12800"],
    "cifar10-tf": [*THROUGHPUT, "workload.width=16", "workload.batch_size=256", "workload.train_limit=10240",
                   "data.synthetic_train=10240", "workload.warmup_steps=3"],
}


def in_guest(workload: str, overrides: list[str], tmp: Path) -> JsonObject:
    results, _ = bench_run(workload, [f"workload={workload}", *overrides], tmp)
    g = results["guests"][0]
    return {"metrics": g["result"]["metrics"], "spec": g["spec"], "info": g["result"]["info"]}


def bare_process(workload: str, guest: JsonObject, tmp: Path) -> tuple[float, str]:
    """Run :func:`bare_loop` in a fresh interpreter (no other framework loaded, same cores), over the steps the
    guest was sized to (the same work and window): (images/s, why it is blank)."""
    path = tmp / f"{workload}-spec.json"
    path.write_text(json.dumps({"spec": guest["spec"], "sized_steps": guest["info"].get("sized_steps")}))
    # the guest's environment (threads, GPUs) from the start, as the runner gives a guest
    proc = subprocess.run([sys.executable, "-m", "suites", "bench-ml", "--bare", workload, str(path)], cwd=REPO,
                          capture_output=True, text=True, env={**os.environ, **environment(GuestSpec(**guest["spec"]))})
    if proc.returncode != 0:
        raise RowFailed("bare: " + why_failed(proc, f"exited {proc.returncode}"))
    said = json.loads(proc.stdout.strip().splitlines()[-1])
    return float(said["images_per_sec"]), said["blank"]


def bare_loop(job: JsonObject) -> JsonObject:
    """The guest's workload with nothing around it: its cores and environment, its own loop and step meter, over
    ``job['sized_steps']`` steps where the guest was sized by time."""
    guest = GuestSpec(**job["spec"])
    apply_resources(guest)  # the guest's cores, as a guest pins them
    wl, cfg = make_workload(guest)
    wl.prepare()
    if job.get("sized_steps"):
        wl.sized_steps = int(job["sized_steps"])
        wl.build()
    meter = StepMeter(cfg.warmup_steps, wl.total_steps(), min_steps=cfg.min_timed_steps, min_s=cfg.min_timed_s)
    meter.start()
    wl.train(meter)
    return {"images_per_sec": meter.finish()["images_per_sec"], "blank": meter.blank_reason}



def judge(suite_rates: list[float], bare_rates: list[float]) -> tuple[Interval, str]:
    """The per-round ratios' interval and what it says about the harness (rounds where either rate is blank are
    left out; with none left, the interval is empty and the verdict says so)."""
    ratios = [a / b for a, b in zip(suite_rates, bare_rates, strict=True) if b > 0 and a > 0]
    iv = ratio_interval(ratios)
    if not ratios:
        return iv, "no rate"
    return iv, VERDICTS.get(said := verdict(iv, higher_is_better=True), said)


GOAL = 0.97  # the harness may cost at most 3 % of a workload's images/s




def interleaved(workload: str, overrides: list[str], rounds: int, tmp: Path,
                out: Console) -> tuple[JsonObject, list[float], list[float], list[str]]:
    """``rounds`` alternating guest and bare runs: (the last guest's results, guest rates, bare rates, why any
    rate was blank)."""
    suite_rates, bare_rates, blanks = [], [], []
    for r in range(rounds):
        out.print(f"bench-ml: {workload} round {r + 1}/{rounds}: guest, then bare", highlight=False)
        suite = in_guest(workload, overrides, tmp)
        suite_rates.append(suite["metrics"]["images_per_sec"])
        bare, blank = bare_process(workload, suite, tmp)
        bare_rates.append(bare)
        if suite["info"].get("images_per_sec_blank"):
            blanks.append(f"guest: {suite['info']['images_per_sec_blank']}")
        if blank:
            blanks.append(f"bare: {blank}")
    return suite, suite_rates, bare_rates, blanks


def row_figures(suite: JsonObject, suite_rates: list[float], bare_rates: list[float], blanks: list[str]) -> list[str]:
    """A workload's cells from steps on: its window, rates, ratio, interval, verdict and goal; a round with a
    blank rate leaves its ratio out, and where no round has both rates the verdict and goal say why."""
    iv, word = judge(suite_rates, bare_rates)
    if word == "no rate":
        word = f"no rate: {blanks[0] if blanks else 'no images'}"
    m = suite["metrics"]
    window = f"{m.get('timed_s', math.nan):.1f} s, {m.get('timed_steps', math.nan):.0f} steps " \
             f"(by {suite['info'].get('sized_by', 'work')})"
    spread = f"[{iv.low:.3f}, {iv.high:.3f}]" if iv.spread else "-"
    return [window, str(iv.n), rate_cell(suite_rates),
            rate_cell(bare_rates), f"{iv.median:.3f}" if iv.n else "-", spread, word,
            goal(iv, GOAL) if iv.n else word]


def rate_cell(rates: list[float]) -> str:
    finite = [r for r in rates if r == r]
    return f"{statistics.median(finite):,.0f}" if finite else "-"


def guest_vcpus(requested: int | None, cores: int) -> int:
    """The guest's cores: as asked, else one fewer than the host's where it has more than two (the runner's)."""
    return requested or (min(2, cores - 1) if cores > 2 else cores)


COLUMNS = ("workload", "device", "vCPUs", "timed window", "n", "guest images/s", "bare images/s", "ratio", "[95% CI]",
           "verdict", f"goal >= {GOAL}")


def results_table(rows: list[list[str]], rounds: int) -> Table:
    table = Table(title=f"in-guest vs bare-process training throughput ({rounds} interleaved round(s) each)",
                  title_justify="left", caption="timed window: the guest's (the bare run trains its steps), sized by "
                  "time (workload.min_window_s) or by the recipe's work; "
                  "ratio: guest images/s / bare images/s, per round; median and 95 % "
                  "CI of the rounds' ratios; verdict: overhead if the CI lies below 1; goal: met if the CI lies above "
                  "it, missed if below, undecided if it spans it (more --rounds)")
    for col in COLUMNS:
        table.add_column(col, justify="left" if col in ("workload", "device", "timed window", "verdict") else "right",
                         no_wrap=col == "workload", overflow="fold")  # a failed row's reason is read whole
    for row in rows:
        table.add_row(*row)
    return fit(table, tables.console_width())  # every word whole ('inconclusive', a missing framework's name)


def skipped_or_failed(workload: str, vcpus: int, why: str, word: str) -> list[str]:
    """A row with no figures: why in its window's cell, ``word`` (skipped / failed) as its verdict and goal."""
    return [workload, "-", str(vcpus), why, "0", "-", "-", "-", "-", word, word]


def measure(workload: str, overrides: list[str], rounds: int, tmp: Path, out: Console, vcpus: int) -> list[str]:
    """One workload's row: its figures, or why it has none (its framework not installed; its run failed)."""
    missing = workload_class(workload).missing()
    if missing:
        return skipped_or_failed(workload, vcpus, f"needs {', '.join(missing)}, not installed in this Python",
                                 "skipped")
    try:
        suite, suite_rates, bare_rates, blanks = interleaved(workload, overrides, rounds, tmp, out)
    except RowFailed as exc:
        return skipped_or_failed(workload, vcpus, str(exc), "failed")
    return [workload, "GPU" if suite["spec"]["gpus"] else "CPU", str(vcpus),
            *row_figures(suite, suite_rates, bare_rates, blanks)]


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m suites bench-ml", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workloads", nargs="+", default=list(DEFAULTS))
    parser.add_argument("--set", nargs="*", default=None, help="Hydra overrides replacing the CPU-sized defaults")
    parser.add_argument("--rounds", type=int, default=3, help="alternating guest and bare runs (n of the CI)")
    parser.add_argument("--vcpus", type=int, default=None, help="the guest's cores (default: one fewer than the "
                        "host's, at most 2, where it has more than two; else all)")
    parser.add_argument("--bare", nargs=2, metavar=("WORKLOAD", "SPEC_JSON"), help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    if args.bare:  # the child side of bare_process
        print(json.dumps(bare_loop(json.loads(Path(args.bare[1]).read_text()))))
        return 0
    unknown = [w for w in args.workloads if w not in list_workloads()]
    if args.rounds < 1 or (args.vcpus is not None and args.vcpus < 1) or unknown:
        why = f"unknown workload(s) {', '.join(unknown)}" if unknown else "--rounds and --vcpus must be >= 1"
        print(f"error: {why}", file=sys.stderr)
        return 2
    cores = host_cores()
    vcpus, out = guest_vcpus(args.vcpus, cores), Console(width=tables.console_width())
    rows: list[list[str]] = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for workload in args.workloads:
                overrides = [*(args.set if args.set is not None else DEFAULTS.get(workload, [])),
                             f"profile.vcpus={vcpus}"]
                rows.append(measure(workload, overrides, args.rounds, Path(tmp), out, vcpus))
                out.print(f"bench-ml: {workload}: " + "; ".join(f"{c} {v}" for c, v in zip(COLUMNS[3:], rows[-1][3:],
                                                                                          strict=True)),
                          highlight=False)
    except KeyboardInterrupt:
        out.print(results_table(rows, args.rounds))
        out.print(f"bench-ml: interrupted after {len(rows)} of {len(args.workloads)} workload(s)", highlight=False)
        return 130
    out.print(results_table(rows, args.rounds))
    if vcpus >= cores:
        out.print(f"note: the guest holds all {cores} host cores, so the runner and its sampler compete with it; "
                  "the ratio includes that (a host with more cores leaves them one)", highlight=False)
    return 1 if any(r[-1] == "failed" for r in rows) else 0


if __name__ == "__main__":
    raise SystemExit(main())
