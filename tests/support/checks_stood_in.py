"""make gpu-check's checks stood in for (each records a run into gpu-check's store as a check's command does, in a
millisecond), and a gpu-check on a faked H200: what tests/unit/suites/gpucheck's campaign and conclusion tests run."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from suites.config.schema import register_configs
from suites.gpucheck import campaign, checks
from suites.gpucheck.campaign import GpuCheck
from suites.gpucheck.checks import Context, Row
from tests.support.helpers import store_at
from tests.support.hosts import gpu_host


def stood_in(monkeypatch: pytest.MonkeyPatch, raise_in: str = "") -> list[str]:
    """Every check replaced by one that records a root run into gpu-check's store (as its command would) and
    passes; ``raise_in``'s raises KeyboardInterrupt after recording (Ctrl-C inside a check)."""
    from mlflow.tracking import MlflowClient

    ran: list[str] = []
    for cid, chk in list(checks.CHECKS.items()):
        def run(ctx: Context, cid: str = cid) -> Row:
            ran.append(cid)
            client = MlflowClient(store_at(ctx.root / "mlflow.db"))
            exp = client.get_experiment_by_name("gpu-mixed-bench")
            run_id = client.create_run(exp.experiment_id, run_name=f"bench-{cid}").info.run_id
            if cid == raise_in:
                raise KeyboardInterrupt
            client.set_terminated(run_id)
            return Row(cid, "ok", f"{cid} figure")
        monkeypatch.setitem(checks.CHECKS, cid, checks.Check(chk.id, chk.title, chk.expected, run))
    return ran


def gpu_check(tmp_path: Path, only: list[str], estimates: dict[str, float] | None = None) -> GpuCheck:
    register_configs()
    store_at(tmp_path / "gc" / "mlflow.db")
    ctx = Context(tmp_path / "gc", gpu_host("NVIDIA H200", 143_771.0), None, time.monotonic() + 600, [].append)
    return GpuCheck(ctx, only, {c: 1.0 for c in campaign.PRIORITY} | (estimates or {}), measured=False)
