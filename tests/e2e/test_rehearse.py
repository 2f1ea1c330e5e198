"""``make rehearse`` (suites/commands/rehearse.py): make gpu-check's own campaign at the H200's measured speed on this
host, through the campaign executor, each check's judge, on the device's clock; and the same with every step and
frame 3x as long, which the device call would not end within its budget."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from suites.gpucheck import campaign
from tests.support.helpers import REPO


def test_gpu_checks_campaign_at_h200_speed_passes_every_played_judge_labelled_not_a_measurement():
    done = subprocess.run(["make", "--no-print-directory", "rehearse", "GPU=h200"], cwd=REPO, capture_output=True,
                          text=True, timeout=900)  # a hang's guard: it takes ~4 minutes on this host kind
    said = " ".join(done.stdout.split())
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "NOT A MEASUREMENT" in said and "MISSED" not in said
    for check in campaign.PRIORITY:  # every check has its row, played or said not to be
        assert f"│ {check} " in done.stdout, check
    for played in ("b1 CUDA training", "i a comparison", "j a mixed run", "l make compare", "k make size",
                   "h make study"):  # make size and make study planned for the device's GPU, under its deadline
        row = next(ln for ln in done.stdout.splitlines() if ln.startswith(f"│ {played}"))
        assert "│ ok " in row, row
    assert "overlap" in said and "cpu time 9." in said  # j's overlap and i's CPU arm at ~10x, played
    assert "on NVIDIA H200:" in said and "report.html" in said  # k's answer is the H200's; h wrote its report
    egl = next(ln for ln in done.stdout.splitlines() if ln.startswith("│ e NVIDIA EGL"))
    assert "│ not rehearsed: NVIDIA's EGL" in egl, egl  # what only the GPU can say: not played, said
    assert re.search(r"every check's judge holds and it would end in \d+ s of budget_s=540 \(the checks 499 s", said)
    assert not list((REPO / "outputs").glob("**/rehearsal-*")) if (REPO / "outputs").exists() else True


def rehearse(gpu: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "suites", "rehearse", "--gpu", gpu, "--only", "a,b1,e",
                           "--budget-s", "45"], cwd=REPO, capture_output=True, text=True, timeout=300)


def test_with_every_step_and_frame_3x_as_long_it_would_overrun(tmp_path: Path):
    """a + b1 + e: 36 s of a 45 s budget at the H200's speed (the rest for the executor's exports: ~4 s on this host
    under CI's load); a GPU 3x slower works 3x as long: 46 s, and e, which the device would not start after a and b1
    (27 s of it), is not started here either."""
    fast = rehearse("h200")
    assert fast.returncode == 0 and re.search(r"every check's judge holds and it would end in \d+ s of budget_s=45 "
                                              r"\(the checks 36 s", " ".join(fast.stdout.split())), fast.stdout
    dev = json.loads((REPO / "configs" / "device" / "h200.json").read_text())
    slow = tmp_path / "slow.json"
    slow.write_text(json.dumps({**dev, "step_ms": {k: 3 * v for k, v in dev["step_ms"].items()},
                                "frame_ms": {k: 3 * v for k, v in dev["frame_ms"].items()}}))
    done = rehearse(str(slow))
    said = " ".join(done.stdout.split())
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-2000:]
    assert "would overrun: the checks' estimates sum to 46 s (budget_s=45); not started on the device's clock: e" \
        in said
