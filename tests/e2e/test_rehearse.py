"""``make rehearse`` (suites/commands/rehearse.py): make gpu-check's own campaign at the H200's measured speed on this
host, through the campaign executor, each check's judge, on the device's clock; and a device file with mnist-torch's
step 3x as long, which the device call would not end within its budget."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from suites.config import device_file
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
    assert "│ not rehearsed: NVIDIA's" in egl, egl  # what only the GPU can say: not played, said
    assert re.search(r"every check's judge holds and it would end in \d+ s of budget_s=540 \(the checks \d+ s", said)
    for check in ("i a comparison", "j a mixed run", "k make size"):  # full size (i, j), 3 repeats: the run rules'
        assert re.search(rf"│ {check}[^│]*│[^│]*│[^│]*│ \d+ \(\d+ work\)", done.stdout), check  # charged its work
    assert "this host's harness cost (no gpu-check on this GPU measured its own yet" in said
    assert not list((REPO / "outputs").glob("**/rehearsal-*")) if (REPO / "outputs").exists() else True


def rehearse(gpu: str, tmp: Path, only: str, budget_s: int) -> subprocess.CompletedProcess[str]:
    folder = Path(tempfile.mkdtemp(prefix="tmp-", dir=tmp))  # its runs' temporary folders: watched
    return progress.run([sys.executable, "-m", "suites", "rehearse", "--gpu", gpu, "--only", only, "--budget-s",
                         str(budget_s)], watch=(folder,), cwd=REPO, env={**os.environ, "TMPDIR": str(folder)})


def test_a_gpu_with_mnist_steps_3x_as_long_would_overrun_where_the_h200_ends_in_time(tmp_path: Path):
    """a + b1 + i within 55 s: on the H200's clock a (its estimate, 1 s), b1 and i each charged the work it played
    here plus the harness cost the device file says the H200 measured for it (5 s, 8 s: not this host's, whatever its
    load), so i starts with ~45 s left of its 40 s estimate and the call ends in ~35 s. With mnist-torch's step 3x as
    long, b1 works 3x as long and i's estimate holds 3x its MNIST work (72 s): the device would not start it."""
    dev = json.loads((REPO / "configs" / "device" / "h200.json").read_text())
    measured = {"b1": {"wall_s": 7.0, "work_s": 2.0, "harness_s": 5.0},
                "i": {"wall_s": 24.0, "work_s": 16.0, "harness_s": 8.0}}
    fast, slow = tmp_path / "h200-measured.json", tmp_path / "mnist-3x.json"
    fast.write_text(json.dumps({**dev, "harness_s": measured}))
    slow.write_text(json.dumps({**dev, "harness_s": measured, "step_ms": {
        k: 3 * v if k.startswith("mnist-torch/") else v for k, v in dev["step_ms"].items()}}))
    done = rehearse(str(fast), tmp_path, "a,b1,i", 55)
    said = " ".join(done.stdout.split())
    assert done.returncode == 0 and re.search(r"every check's judge holds and it would end in \d+ s of budget_s=55 ",
                                              said), done.stdout[-3000:] + done.stderr[-2000:]
    assert "plus the device's harness cost" in said and "this host's" not in said, said[-2000:]
    done = rehearse(str(slow), tmp_path, "a,b1,i", 55)
    said = " ".join(done.stdout.split())
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-2000:]
    estimates, _ = campaign.estimates_for(device_file.load(str(slow)))
    assert estimates["i"] == campaign.ESTIMATE_S["i"] + 2 * campaign.WORK_S["i"]["mnist"] > 55 - 1 - 11  # its work 3x
    assert re.search(r"would overrun: the call \d+ s on the device's clock, its checks \d+ s of it \(budget_s=55; "
                     rf"the checks' estimates {sum(estimates[c] for c in ('a', 'b1', 'i')):.0f} s\); not started on "
                     r"the device's clock: i", said), said[-2000:]
    b1 = [ln for ln in done.stdout.splitlines() if ln.startswith("│ b1 ")][0]
    assert re.search(r"│ (1[0-9]) \((\d) work\)", b1), b1  # b1 played its epochs at the 3x step: ~5 s of work
