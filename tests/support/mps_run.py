"""A run under ``sharing=mps`` on a recorded H100 inventory, for the MPS lifecycle tests (``python -m
tests.support.mps_run OUT SECONDS``): the real planner, the real runner and real guest processes (``idle``, which
needs no CUDA); only the GPU is absent, so the inventory is a fake and the MPS control program a stand-in on PATH
(tests/e2e/test_mps.py).
Writes OUT/outcome.json: status, reasons, and what each guest reported; ``owed``: the signal a shield held off and
the command has still to honour (suites/run/shield.py), by name, or null."""

from __future__ import annotations

import json
import signal
import sys
from pathlib import Path

from gpu_probe.inventory import Inventory
from suites.config.compose import compose_run
from suites.config.schema import register_configs
from suites.run.execute import Around, execute, one_daemon
from suites.run.plan import plan, plan_and_lease
from suites.run.shield import noted, stop_on_signals

H100 = {"index": 0, "uuid": "GPU-11111111-2222-3333-4444-555555555555", "name": "NVIDIA H100 80GB HBM3",
        "mem_total_MiB": 81559.0}


def main(out: Path, seconds: float, runs: int = 1) -> None:
    stop_on_signals()  # as every command does: a signal a shield holds off is owed to it
    register_configs()
    comp = compose_run(["profile=m60-2q", "profile.vcpus=1", "profile.memory_MiB=1024", "scenario=concurrent",
                        "scenario.cpu_overcommit=true", "workload=idle", f"workload.seconds={seconds}",
                        "sharing=mps", "progress=quiet"])
    inv = Inventory("h", "Linux", "3.11", "cpu", 2, 2, 2, 8192.0, gpus=[H100], gpu_status="1 GPU(s)")
    # as the bench command does: the cores are leased, and a test beside it that holds them is waited for
    # (BENCH_WAIT_FOR_CORES_S, tests/conftest.py), not a refusal (seen in CI: "another benchmark run holds cores 0,1")
    plans, cores = plan_and_lease(lambda: [plan(comp.runs[0], inv) for _ in range(runs)], lambda ps: ps, out,
                                  comp.cfg.wait_for_cores_s)
    with cores:
        if runs == 1:
            outcomes = [execute(plans[0], out)]
        else:  # a comparison's runs, as run_phases runs them: under one daemon
            with one_daemon(plans, out) as shared:
                outcomes = [execute(p, out / f"run{i}", Around(shared)) for i, p in enumerate(plans)]
    written = [{"status": o.status, "reasons": o.reasons,
                "guests": {g.spec.guest_id: {"status": g.result.status, "error": g.result.error, "info": g.result.info,
                                             "validity": g.validity, "env": g.spec.env, "note": g.placement.note}
                           for g in o.guests}} for o in outcomes]
    owed = noted()
    for w in written:
        w["owed"] = signal.Signals(owed).name if owed else None
    (out / "outcome.json").write_text(json.dumps(written[0] if runs == 1 else written))


def cli(argv: list[str]) -> int:
    """OUT SECONDS [RUNS], as the command line gives them."""
    main(Path(argv[0]), float(argv[1]), *(int(a) for a in argv[2:3]))
    return 0


if __name__ == "__main__":
    sys.exit(cli(sys.argv[1:]))
