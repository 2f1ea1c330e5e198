"""How a gpu-check ends: every chosen check's row (what it found, or why it did not start), the report written and
each check's result on the gpu-check run, the run FAILED where a check failed or was inconclusive."""

from __future__ import annotations

import time
from collections.abc import Callable

from suites import store_keys as keys
from suites.campaign import NOT_RUN, SKIPPED, CampaignRun, Conclusion
from suites.gpucheck import judges
from suites.gpucheck.campaign import GpuCheck
from suites.gpucheck.checks import Row
from suites.gpucheck.report import write_summary
from suites.record import mlflow_runs

__all__ = ["concluder", "rows_of"]


def rows_of(gc: GpuCheck, run: CampaignRun) -> list[Row]:
    """Every chosen check's row in priority order: what it found, or why it did not start."""
    why = {p.name: p.why for p in run.parts if p.how in (SKIPPED, NOT_RUN)}
    out = []
    for c in gc.chosen:
        if c in gc.rows:
            out.append(gc.rows[c])
        elif c in why:
            out.append(Row(c, f"{judges.SKIPPED}: {why[c] or 'not run'}"))
        elif run.stopped:  # the check an interrupt stopped: its row said, never dropped (round 7)
            out.append(Row(c, f"{judges.SKIPPED}: not finished: {run.stopped}"))
    return out


def concluder(gc: GpuCheck, started: float) -> Callable[[CampaignRun], Conclusion]:
    """What the executor calls once the checks ran: the summary and device file written, each check's result on the
    gpu-check run (FAILED where a check failed or was inconclusive: neither passed)."""
    def done(run: CampaignRun) -> Conclusion:
        rows = rows_of(gc, run)
        files = write_summary(gc, rows, time.monotonic() - started)
        run.record(mlflow_runs.ParentResults({}, {}, {keys.check(r.check): r.result for r in rows}))
        bad = [r for r in rows if r.result.startswith((judges.FAILED, judges.INCONCLUSIVE))]
        return Conclusion(files, "KILLED" if run.stopped else ("FAILED" if bad else "FINISHED"))
    return done
