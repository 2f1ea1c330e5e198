"""``make rehearse`` (suites/commands/rehearse.py): the GPU path at each lent GPU's speed, on this host, in its short
form for both GPUs (make test's)."""

from __future__ import annotations

import subprocess
import time

import pytest

from tests.support.helpers import REPO


@pytest.mark.parametrize("gpu", ["h200", "h100"])
def test_the_rehearsal_at_gpu_speed_passes_labelled_not_a_measurement(gpu: str):
    t0 = time.monotonic()
    done = subprocess.run(["make", "--no-print-directory", "rehearse", f"GPU={gpu}", "SHORT=1"], cwd=REPO,
                          capture_output=True, text=True, timeout=400)
    said = " ".join(done.stdout.split())
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "NOT A MEASUREMENT" in said and "MISSED" not in said
    for check in ("time ratio of equal work", "mixed overlap", "memory within cap: m60-1q", "study plan within budget",
                  "make size plan within budget", "rate window: mixed", "rate window: bench-ml fixed-step"):
        assert check in said, check
    assert time.monotonic() - t0 < 180  # the short form: under 3 minutes on this host
    assert not list((REPO / "outputs").glob("**/rehearsal.db")) if (REPO / "outputs").exists() else True
