"""Every console table of every command fits 120 columns."""

from __future__ import annotations

import io


# --- every console table fits 120 columns -------------------------------------------------------------------------
def ml_table():
    """make bench-ml's table with a row of figures, a skipped workload's and an inconclusive GPU row: 11 columns
    where rich folded 'inconclusive' and 'tensorflow,' though every word had room."""
    from suites.commands import selfmeasure_ml as ml

    return ml.results_table([
        ["mnist-torch", "cpu", "2", "2.0 s, 59 steps (by time)", "3", "3,154", "3,300", "0.96", "[0.93, 0.99]",
         "overhead", "met"],
        ml.skipped_or_failed("mnist-tf", 2, "needs tensorflow, not installed in this Python", "skipped"),
        ["cifar10-torch", "cuda:0 (NVIDIA H200)", "2", "2.1 s, 12 steps (by work)", "3", "182,675", "190,000", "0.96",
         "[0.93, 0.99]", "inconclusive", "undecided"]], 3)


def test_every_console_table_fits_120_columns():
    from rich.console import Console

    from suites.gpucheck.checks import CHECKS, Row
    from suites.gpucheck.report import table as gpu_table
    from suites.render import mixed_report as report
    from suites.render import tables
    from tests.support.helpers import broken_tokens
    from tests.support.outcomes import LONG, outcome, phases, study

    rows = phases()
    for r in rows:
        r.reference, r.throughput_verdict = "train time 10.06x; CPU 43 % vs 8 %", "inconclusive (CI ±48.6 %, n=3; " \
            "~211 repeats would settle it)"
    no_gpu = "skipped: no GPU: NVML unavailable (NVML Shared Library Not Found)"
    rendered = [tables.results_table(outcome(), "single: 6 x m60-8q running cifar10-torch " + LONG),
                *tables.comparison_tables(rows, "scaling: cifar10-torch, normalised to 1-gpu " + LONG),
                *report.console_tables(study()), ml_table(),
                gpu_table([Row(c, no_gpu) for c in CHECKS], "gpu-check " + LONG)]
    for t in rendered:
        out = Console(width=tables.console_width(), record=True, file=io.StringIO())
        out.print(t)
        lines = out.export_text().splitlines()
        assert max(len(line) for line in lines) <= 120, "\n".join(lines)
        assert not broken_tokens(t, lines), "\n".join(lines)
    # the gpu-check table on a host without a GPU: one short row per check, the reason once under it
    out = Console(width=120, record=True, file=io.StringIO())
    out.print(rendered[-1])
    text = out.export_text()
    assert text.count("NVML unavailable") == 1 and len(text.splitlines()) <= len(CHECKS) + 8
