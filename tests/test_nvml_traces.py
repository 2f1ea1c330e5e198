"""Named NVML scenarios replayed from trace files through the real wrapper, inventory and sampler.

The traces in tests/traces are written in the format ``python -m gpu_probe
record`` produces; the real driver path runs in test_nvml.py when a GPU is there.
"""

import json
import math
import subprocess
import sys
import time
from pathlib import Path

import pynvml
import pytest

from gpu_probe import inventory
from gpu_probe.nvml import CLOCK_EVENT_REASONS, Nvml, decode_clock_events
from gpu_probe.sampler import Sampler
from gpu_probe.trace import RecordingNvml, ReplayNvml, TraceError

from .helpers import REPO

TRACES = Path(__file__).parent / "traces"


def replay(name: str) -> Nvml:
    return Nvml(ReplayNvml.load(TRACES / f"{name}.json"))


def sample(name: str, seconds: float = 0.3, rate_hz: float = 50) -> Sampler:
    with Sampler(rate_hz, nvml=replay(name)) as s:
        time.sleep(seconds)
    return s


def test_no_gpu_host():
    nv = replay("no-gpu").open()
    assert not nv.available and nv.reason.startswith("no GPU")
    inv = inventory.collect(nv)
    assert inv.gpus == [] and inv.gpu_status.startswith("no GPU")
    s = sample("no-gpu")
    assert s.gpu_status.startswith("no GPU") and not any(c.startswith("gpu") for c in s.columns())


def test_gpu_lost_mid_run():
    with replay("h100-gpu-lost") as nv:
        inv = inventory.collect(nv)
    assert inv.gpus[0]["name"] == "NVIDIA H100 80GB HBM3" and inv.cuda_driver_version == "13.0"
    s = sample("h100-gpu-lost", seconds=0.6)
    util = [r["gpu0.util_pct"] for r in s.rows]
    assert util[0] == 97 and math.isnan(util[-1]), "readings before the loss, missing after"
    assert s.errors == 0 and s.aggregate("gpu0.")["power_W.max"] == pytest.approx(612.34)
    assert s.clock_events_seen() == {"gpu0": ["sw_power_cap"]}


def test_field_not_supported():
    s = sample("t4-power-not-supported")
    agg = s.aggregate("gpu0.")
    assert agg["util_pct.mean"] == 42 and agg["temp_C.max"] == 47
    assert not any(k.startswith("power_W") for k in agg), "an unsupported field is absent, not zero"
    assert all(math.isnan(r["gpu0.power_W"]) for r in s.rows)


def test_mig_host():
    with replay("a100-mig") as nv:
        gpu = inventory.collect(nv).gpus[0]
    assert gpu["mig_mode"] == "enabled"
    assert [m["name"] for m in gpu["mig_devices"]] == ["NVIDIA A100-SXM4-40GB MIG 3g.20gb"] * 2
    assert [m["gpu_instance_id"] for m in gpu["mig_devices"]] == [1, 2]
    assert gpu["mig_devices"][0]["mem_total_MiB"] == pytest.approx(19968)
    assert math.isnan(sample("a100-mig").rows[0]["gpu0.util_pct"])  # not supported in MIG mode


def test_vgpu_host():
    with replay("m60-vgpu-host") as nv:
        gpu = inventory.collect(nv).gpus[0]
    assert gpu["virtualization_mode"] == "vgpu-host" and gpu["vgpu_scheduler"] == "best-effort"
    assert [(v["type_name"], v["type_framebuffer_MiB"], v["type_max_instances"]) for v in gpu["vgpus"]] == \
        [("GRID M60-2Q", 2048, 4)] * 2
    assert [v["fb_used_MiB"] for v in gpu["vgpus"]] == [768, 1280]
    assert [v["vm_id"] for v in gpu["vgpus"]] == ["cad-desktop-1", "mnist-trainer"]
    agg = sample("m60-vgpu-host").aggregate("gpu0.")
    assert agg["vgpu7.util_pct.mean"] == 35 and agg["vgpu8.util_pct.mean"] == 36
    assert agg["vgpu8.mem_used_MiB.max"] == 1280


def test_clock_event_names_match_the_binding():
    for name in dir(pynvml):
        if name.startswith("nvmlClocksEventReason") and name not in ("nvmlClocksEventReasonAll",
                                                                    "nvmlClocksEventReasonNone",
                                                                    "nvmlClocksEventReasonUserDefinedClocks"):
            assert getattr(pynvml, name) in CLOCK_EVENT_REASONS, name
    assert sum(CLOCK_EVENT_REASONS) == pynvml.nvmlClocksEventReasonAll
    assert decode_clock_events(0x41) == ["gpu_idle", "hw_thermal_slowdown"]
    assert decode_clock_events(0x1000) == ["unknown_0x1000"]
    assert decode_clock_events(float("nan")) == []


def test_recording_a_replay_reproduces_it(tmp_path: Path):
    """The recorder's output replays to the same inventory: the format round-trips."""
    rec = RecordingNvml(ReplayNvml.load(TRACES / "m60-vgpu-host.json"), description="round trip")
    nv = Nvml(rec).open()
    first = inventory.collect(nv)
    s = Sampler(10, nvml=nv).prepare()
    rec.new_frame()
    s.collect()
    path = tmp_path / "again.json"
    path.write_text(json.dumps(rec.to_dict()))
    with Nvml(ReplayNvml.load(path)) as nv2:
        again = inventory.collect(nv2)
    assert again.gpus == first.gpus
    assert rec.frames and "nvmlDeviceGetUtilizationRates(gpu0)" in json.dumps(rec.to_dict())


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


@pytest.mark.e2e
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


@pytest.mark.e2e
def test_cli_inventory_replays_a_vgpu_host():
    proc = subprocess.run([sys.executable, "-m", "gpu_probe", "inventory", "--trace",
                           str(TRACES / "m60-vgpu-host.json")], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0
    assert json.loads(proc.stdout)["gpus"][0]["vgpus"][1]["type_name"] == "GRID M60-2Q"


@pytest.mark.e2e
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


def test_a_vgpu_guest_asks_for_its_scheduler_and_gets_none():
    """Inside a vGPU VM NVML does not answer for the hypervisor's scheduler: asked (a fleet sizing records what the
    VM could see), it is N/A, never a policy guessed."""
    with replay("m60-4q-vgpu-guest") as nv:
        gpu = inventory.collect(nv).gpus[0]
    assert gpu["virtualization_mode"] == "vgpu-guest" and gpu["vgpu_scheduler"] is None  # NA, as JSON
