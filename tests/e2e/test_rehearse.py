"""``make rehearse`` (suites/commands/rehearse.py): make gpu-check's own campaign at the H200's measured speed on this
host, through the campaign executor, each check's judge, on the device's clock; and the same with every step and
frame 3x as long, which the device call would not end within its budget."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from suites.gpucheck import campaign
from tests.support import progress
from tests.support.helpers import REPO


@pytest.mark.slow(minutes=5)  # its module goes first (tests/conftest.py)
def test_gpu_checks_campaign_at_h200_speed_passes_every_played_judge_labelled_not_a_measurement(tmp_path: Path):
    # ~4 minutes on this host kind alone; guarded by its progress (its lines, its runs' files), not a total
    done = progress.run(["make", "--no-print-directory", "rehearse", "GPU=h200"], watch=(tmp_path,), cwd=REPO,
                        env={**os.environ, "TMPDIR": str(tmp_path)})
    said = " ".join(done.stdout.split())
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "NOT A MEASUREMENT" in said and "MISSED" not in said
    assert not re.search(r"\bnan\b", said), said  # a figure a stand-in cannot give is said in words (judges.shown)
    for check in campaign.PRIORITY:  # every check has its row, played or said not to be
        assert f"│ {check} " in done.stdout, check
    for played in ("b1 CUDA training", "i a comparison", "j a mixed run", "l make compare", "k make size",
                   "h make study"):  # make size and make study planned for the device's GPU, under its deadline
        row = next(ln for ln in done.stdout.splitlines() if ln.startswith(f"│ {played}"))
        assert "│ ok " in row, row
    assert "overlap" in said, said[-3000:]  # j's overlap, played
    # i's CPU arm played at the reference study's 10x: measured here, on a host that may be busy, so about 10x (a CPU
    # arm played at the device's own speed would be ~1x)
    ratio = re.search(r"cpu time (\d+\.\d+)x", said)
    assert ratio and 5.0 <= float(ratio.group(1)) <= 15.0, ratio.group(0) if ratio else said[-3000:]
    assert "on NVIDIA H200:" in said and "report.html" in said  # k's answer is the H200's; h wrote its report
    h = said[said.find("│ h make study"):][:900]  # its report in a folder removed since: said, and by name
    assert "<the rehearsal's folder," in h and "removed>/…/report.html" in h and "/tmp" not in h, h
    egl = next(ln for ln in done.stdout.splitlines() if ln.startswith("│ e NVIDIA EGL"))
    assert "│ not rehearsed: NVIDIA's EGL" in egl, egl  # what only the GPU can say: not played, said
    assert re.search(r"every check's judge holds and it would end in \d+ s of budget_s=540 \(the checks 499 s", said)
    assert not list((REPO / "outputs").glob("**/rehearsal-*")) if (REPO / "outputs").exists() else True


def rehearse(gpu: str, tmp: Path) -> subprocess.CompletedProcess[str]:
    folder = Path(tempfile.mkdtemp(prefix="tmp-", dir=tmp))  # its runs' temporary folders: watched
    return progress.run([sys.executable, "-m", "suites", "rehearse", "--gpu", gpu, "--only", "a,b1,e", "--budget-s",
                         "45"], watch=(folder,), cwd=REPO, env={**os.environ, "TMPDIR": str(folder)})


def test_with_every_step_and_frame_3x_as_long_it_would_overrun(tmp_path: Path):
    """a + b1 + e: 36 s of a 45 s budget at the H200's speed (the rest for the executor's exports: ~4 s on this host
    under CI's load); a GPU 3x slower works 3x as long: 46 s, and e, which the device would not start after a and b1
    (27 s of it), is not started here either."""
    fast = rehearse("h200", tmp_path)
    assert fast.returncode == 0 and re.search(r"every check's judge holds and it would end in \d+ s of budget_s=45 "
                                              r"\(the checks 36 s", " ".join(fast.stdout.split())), fast.stdout
    dev = json.loads((REPO / "configs" / "device" / "h200.json").read_text())
    slow = tmp_path / "slow.json"
    slow.write_text(json.dumps({**dev, "step_ms": {k: 3 * v for k, v in dev["step_ms"].items()},
                                "frame_ms": {k: 3 * v for k, v in dev["frame_ms"].items()}}))
    done = rehearse(str(slow), tmp_path)
    said = " ".join(done.stdout.split())
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-2000:]
    assert "would overrun: the checks' estimates sum to 46 s (budget_s=45); not started on the device's clock: e" \
        in said
