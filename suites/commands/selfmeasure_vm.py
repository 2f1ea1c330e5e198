"""``make bench-vm``: what a guest VM costs next to a guest process (``backend=vm`` vs ``backend=local``).

Three figures, each over ``--rounds`` runs of the real CLI, as a median with the 95 % CI of the rounds:
boot time (QEMU's start to the guest's first protocol line, per VM), start skew (when 2 and 4 VMs are started
together, the last VM ready at the barrier minus the first), and throughput (for each smoke workload, rounds
alternate: one guest in a VM, then the same guest as a process; the ratio of round i is VM images/s over process
images/s). Under TCG (emulation: a host whose KVM runs no guest) every figure is emulation's cost, not
virtualization's, and the tables say so.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from rich.console import Console
from rich.table import Table

from gpu_probe.stats import Interval, confidence_interval, ratio_interval, verdict
from suites.pipeline.selfmeasure import VERDICTS, bench_run, host_cores
from suites.render import tables

VM_MiB = 2048
SMOKE = ["+preset=smoke", "profile.vcpus=1", f"profile.memory_MiB={VM_MiB}"]  # 4 VMs fit a 24 GiB host


def host_memory_MiB() -> int:
    import psutil

    return int(psutil.virtual_memory().total // 2**20)


def vm_facts(run_dir: Path, results: dict) -> list[dict]:
    return [json.loads((run_dir / f"{g['spec']['guest_id']}.vm.json").read_text()) for g in results["guests"]]


def fmt(iv: Interval, digits: int = 2) -> str:
    """Median [95 % CI of the mean]; every figure here is >= 0, so a t-interval's lower end is shown from 0."""
    if not iv.n:
        return "-"
    spread = f" [{max(0.0, iv.low):.{digits}f}, {iv.high:.{digits}f}]" if iv.spread else ""
    return f"{iv.median:.{digits}f}{spread}"


def start_costs(counts: list[int], rounds: int, accel: str, tmp: Path, out: Console) -> tuple[Table, str]:
    table = Table(title=f"VM boot and start skew ({rounds} round(s) each, idle guests, 1 vCPU)", title_justify="left",
                  caption="boot: QEMU start -> the guest's first protocol line, every VM of every round; skew: last VM "
                          "ready at the barrier - first, per round; median [95 % CI]")
    for col in ("VMs", "accel", "n boots", "boot s", "n rounds", "start skew s"):
        table.add_column(col, justify="right")
    seen = ""
    for n in counts:
        boots, skews = [], []
        for r in range(rounds):
            out.print(f"bench-vm: {n} VMs round {r + 1}/{rounds}", highlight=False)
            overcommit = ["scenario.cpu_overcommit=true"] if n > host_cores() else []
            results, run_dir = bench_run(f"vm{n}-{r}", [*SMOKE, "backend=vm", f"vm.accel={accel}", "workload=idle",
                                                        "scenario=concurrent", f"scenario.guests={n}", *overcommit],
                                         tmp)
            facts = vm_facts(run_dir, results)
            boots += [f["boot_s"] for f in facts]
            ready = [f["t_ready"] for f in facts]
            skews.append(max(ready) - min(ready))
            seen = results["guests"][0]["placement"]["note"]
        table.add_row(str(n), "TCG" if "TCG" in seen else "KVM", str(len(boots)), fmt(confidence_interval(boots)),
                      str(len(skews)), fmt(confidence_interval(skews)))
    return table, seen


def throughput(workloads: list[str], rounds: int, accel: str, tmp: Path, out: Console) -> Table:
    table = Table(title=f"in-VM vs process training throughput ({rounds} interleaved round(s), smoke sizes: each a "
                        "0.5 s timed window, 1 vCPU)",
                  title_justify="left", caption="ratio: VM images/s / process images/s per round; median [95 % CI]; "
                  "verdict: overhead if the CI lies below 1")
    for col in ("workload", "n", "VM images/s", "process images/s", "ratio [95% CI]", "verdict"):
        table.add_column(col, justify="left" if col in ("workload", "verdict") else "right")
    for workload in workloads:
        vm_rates, local_rates = [], []
        for r in range(rounds):
            out.print(f"bench-vm: {workload} round {r + 1}/{rounds}: VM, then process", highlight=False)
            common = [*SMOKE, f"workload={workload}"]
            vm, _ = bench_run(f"{workload}-vm-{r}", [*common, "backend=vm", f"vm.accel={accel}"], tmp)
            local, _ = bench_run(f"{workload}-local-{r}", common, tmp)
            vm_rates.append(vm["guests"][0]["result"]["metrics"]["images_per_sec"])
            local_rates.append(local["guests"][0]["result"]["metrics"]["images_per_sec"])
        # a round where either rate is blank (its window too short) gives no ratio; no ratio at all, no verdict
        ratios = ratio_interval([a / b for a, b in zip(vm_rates, local_rates, strict=True) if a > 0 and b > 0])
        said = VERDICTS.get(word := verdict(ratios, higher_is_better=True), word) if ratios.n else "no rate"
        table.add_row(workload, str(ratios.n), fmt(confidence_interval(vm_rates), 0),
                      fmt(confidence_interval(local_rates), 0), fmt(ratios, 3), said)
    return table


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m suites bench-vm", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--vms", type=int, nargs="+", default=[2, 4], help="VMs started together (start skew)")
    parser.add_argument("--workloads", nargs="*", default=["mnist-torch"], help="smoke workloads timed in a VM")
    parser.add_argument("--accel", choices=["auto", "kvm", "tcg"], default="auto")
    args = parser.parse_args(argv)
    if args.rounds < 1 or any(n < 1 for n in args.vms):
        print("error: --rounds and --vms must be >= 1", file=sys.stderr)
        return 2
    fits = host_memory_MiB() // VM_MiB
    if max(args.vms) > fits:  # said before the first VM starts, not by the bench of that count
        print(f"error: --vms {max(args.vms)}: {max(args.vms)} VMs x {VM_MiB} MiB is more than this host's memory "
              f"holds ({fits} VMs)", file=sys.stderr)
        return 2
    out = Console(width=tables.console_width())
    with tempfile.TemporaryDirectory() as tmp:
        starts, note = start_costs(args.vms, args.rounds, args.accel, Path(tmp), out)
        out.print(starts)
        if args.workloads:
            out.print(throughput(args.workloads, args.rounds, args.accel, Path(tmp), out))
    out.print(f"note: {note}", highlight=False)
    if "TCG" in note:
        out.print("note: TCG emulation: not a performance measurement; these are emulation's costs, not a "
                  "hypervisor's (a KVM host gives virtualization's)", highlight=False)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
