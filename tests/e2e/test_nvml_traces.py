"""Named NVML scenarios replayed from trace files through the real wrapper, inventory and sampler.

The traces in tests/traces are written in the format ``python -m gpu_probe
record`` produces; the real driver path runs in test_nvml.py when a GPU is there.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gpu_probe.nvml import Nvml
from gpu_probe.sampler import Sampler
from gpu_probe.trace import ReplayNvml, TraceError
from tests.support.helpers import REPO
from tests.support.traces import TRACES

MALFORMED = {
    "not-json": ("{oops", "not valid JSON"),
    "wrong-format": (json.dumps({"format": "something-else", "version": 1}), "not an NVML trace"),
    "future-version": (json.dumps({"format": "gpu_probe.nvml-trace", "version": 9}), "version 9"),
    "frames-out-of-order": (json.dumps({"format": "gpu_probe.nvml-trace", "version": 1, "static": {},
                                        "frames": [{"t": 1, "calls": {}}, {"t": 0, "calls": {}}]}), "time order"),
    "frame-without-time": (json.dumps({"format": "gpu_probe.nvml-trace", "version": 1,
                                       "frames": [{"calls": {}}]}), "numeric 't'"),
    "bad-call-key": (json.dumps({"format": "gpu_probe.nvml-trace", "version": 1,
                                 "static": {"nvmlDeviceGetCount": 1}}), "bad call key"),
    "unknown-error-name": (json.dumps({"format": "gpu_probe.nvml-trace", "version": 1,
                                       "static": {"nvmlDeviceGetCount()": {"error": "ON_FIRE"}}}), "ON_FIRE"),
    "truncated": ('{"format": "gpu_probe.nvml-trace", "version": 1, "static": {"nvmlDevi', "not valid JSON"),
}


@pytest.mark.parametrize("name", sorted(MALFORMED))
def test_malformed_trace_is_one_clear_line(tmp_path: Path, name: str):
    text, expected = MALFORMED[name]
    path = tmp_path / f"{name}.json"
    path.write_text(text)
    with pytest.raises(TraceError, match=expected):
        ReplayNvml.load(path)
    proc = subprocess.run([sys.executable, "-m", "gpu_probe", "inventory", "--trace", str(path)],
                          cwd=REPO, capture_output=True, text=True, timeout=60)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1 and lines[0].startswith("error: ") and expected in lines[0]


def test_cli_inventory_replays_a_vgpu_host():
    proc = subprocess.run([sys.executable, "-m", "gpu_probe", "inventory", "--trace",
                           str(TRACES / "m60-vgpu-host.json")], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0
    assert json.loads(proc.stdout)["gpus"][0]["vgpus"][1]["type_name"] == "GRID M60-2Q"


def test_per_guest_gpu_memory_and_utilisation_follow_the_process_tree():
    """NVML reports per pid; the sampler sums a guest's whole tree (here: a child of the guest)."""
    guest = subprocess.Popen([sys.executable, "-c", "import subprocess, sys; subprocess.run([sys.executable, '-c', "
                                                    "'import time; time.sleep(3)'])"])
    try:
        time.sleep(0.5)
        worker = next(iter(__import__("psutil").Process(guest.pid).children())).pid
        raw = json.loads((TRACES / "h100-gpu-lost.json").read_text())
        raw["frames"] = raw["frames"][:1]  # keep the GPU alive
        calls = raw["frames"][0]["calls"]
        calls["nvmlDeviceGetComputeRunningProcesses(gpu0)"] = [{"pid": worker, "usedGpuMemory": 3 * 2**30},
                                                               {"pid": 999999, "usedGpuMemory": 2**30}]
        calls["nvmlDeviceGetProcessesUtilizationInfo(gpu0)"] = [
            {"pid": worker, "timeStamp": 5_000_000, "smUtil": 55, "memUtil": 20},
            {"pid": 999999, "timeStamp": 5_000_000, "smUtil": 30, "memUtil": 10}]
        with Sampler(20, nvml=Nvml(ReplayNvml(raw))) as s:
            s.watch("g0", guest.pid)
            time.sleep(0.4)
        agg = s.aggregate("g0.")
        assert agg["gpu_mem_MiB.max"] == 3072 and agg["gpu_util_pct.max"] == 55  # not the stranger's 1 GiB / 30 %
    finally:
        guest.kill()
        guest.wait()
