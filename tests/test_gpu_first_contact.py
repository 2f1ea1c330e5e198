"""First contact with a real GPU (issue 40): the ways a healthy H100 would fail ``make gpu-check`` or get wrong
figures, each checked on this host without one. Stand-ins replace only the absent hardware: pynvml answers (None
values, MPS process lists), torch.cuda and TensorFlow's device config, an nvcc on PATH, EGL vendor files.

Each test is named after its item; each fails on cfed7fc.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import stat
import sys
from pathlib import Path
from types import SimpleNamespace

import pynvml
import pytest

from gpu_probe import probe
from gpu_probe.nvml import Nvml
from suites.run.plan import peer_timeout_s, shm_problem
from suites.workloads import keras_common, torch_common
from suites.workloads.graphics import egldevice

from .test_gpu_paths import fake_torch
from .test_nvml import RecordedNvml


class ProcessLists(RecordedNvml):
    """The recorded GPU with the process lists a case needs: (pid, usedGpuMemory bytes or None) per list."""

    def __init__(self, compute=(), graphics=(), mps=None):
        super().__init__()
        self.lists = {"compute": compute, "graphics": graphics}
        if mps is not None:
            self.lists["mps"] = mps

    @staticmethod
    def procs(entries):
        return [SimpleNamespace(pid=pid, usedGpuMemory=used) for pid, used in entries]

    def nvmlDeviceGetComputeRunningProcesses(self, h):
        return self.procs(self.lists["compute"])

    def nvmlDeviceGetGraphicsRunningProcesses(self, h):
        return self.procs(self.lists["graphics"])

    def __getattr__(self, name: str):
        if name == "nvmlDeviceGetMPSComputeRunningProcesses" and "mps" in self.lists:
            return lambda h: self.procs(self.lists["mps"])
        raise AttributeError(name)


# --- 4. "not available" is never 0 ---------------------------------------------------------------------------

def test_item4_nvml_used_memory_not_available_stays_unmeasured_not_zero():
    """pynvml gives usedGpuMemory=None where NVML cannot say (unprivileged, MIG): it used to be a silent 0."""
    nv = Nvml(ProcessLists(compute=[(7, None), (8, 300 * 2**20)], graphics=[(8, None)])).open()
    mem = nv.process_memory(0)
    assert math.isnan(mem[7]) and mem[8] == 300.0  # a figure in one list and None in another: the figure


def test_item4_a_context_nvml_lists_without_a_figure_is_measured_another_way(monkeypatch: pytest.MonkeyPatch):
    """nvml_process_MiB: None (cannot say), so measure_context falls back, never a context of 0 MiB."""
    lib = ProcessLists(compute=[(os.getpid(), None)])
    lib.nvmlDeviceGetUUID = lambda h: "GPU-abc"
    monkeypatch.setitem(sys.modules, "pynvml", lib)
    assert torch_common.nvml_process_MiB("GPU-abc") is None
    lib.lists["compute"] = [(os.getpid(), 700 * 2**20)]
    assert torch_common.nvml_process_MiB("abc") == 700.0


# --- 5. MPS clients ---------------------------------------------------------------------------------------------

def test_item5_mps_clients_are_listed_by_their_own_call_and_counted_once():
    server, client = 100, 200
    nv = Nvml(ProcessLists(compute=[(server, 30 * 2**20)], mps=[(client, 900 * 2**20), (server, 30 * 2**20)]))
    assert nv.open().process_memory(0) == {server: 30.0, client: 900.0}


# --- 6. TF's cap keeps the context out ------------------------------------------------------------------------

class FakeTfConfig:
    def __init__(self) -> None:
        self.limits: dict[str, int] = {}

    def set_logical_device_configuration(self, gpu: str, configs: list) -> None:
        self.limits[gpu] = configs[0].memory_limit

    @staticmethod
    def LogicalDeviceConfiguration(memory_limit: int) -> SimpleNamespace:  # noqa: N802 (TF's name)
        return SimpleNamespace(memory_limit=memory_limit)


def test_item6_tf_logical_device_gets_the_framebuffer_less_the_context():
    tf = SimpleNamespace(config=FakeTfConfig())
    guest = object.__new__(keras_common.KerasClassifier)
    guest.ctx = SimpleNamespace(framebuffer_MiB=4096)
    note = guest._cap_framebuffer(tf, ["GPU:0"])
    assert tf.config.limits == {"GPU:0": 4096 - keras_common.TF_CONTEXT_MiB}
    assert note.startswith(f"4096 MiB: TF device {4096 - keras_common.TF_CONTEXT_MiB} MiB + ")
    with pytest.raises(Exception, match="512 MiB framebuffer < the 640 MiB kept for TF's CUDA context"):
        keras_common.tf_memory_limit(512)


# --- 7. NVIDIA EGL missing -------------------------------------------------------------------------------------

def vendor(folder: Path, name: str, library: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(json.dumps({"file_format_version": "1.0.0", "ICD": {"library_path": library}}))
    return folder / name


def test_item7_only_mesa_listed_is_said_with_the_fix_before_any_guest(tmp_path: Path):
    vendor(tmp_path, "50_mesa.json", "libEGL_mesa.so.0")
    problem = egldevice.nvidia_egl_problem({"__EGL_VENDOR_LIBRARY_DIRS": str(tmp_path)})
    assert problem is not None and problem.startswith("no NVIDIA EGL vendor library (EGL vendors found: "
                                                      "libEGL_mesa.so.0)")
    assert "NVIDIA_DRIVER_CAPABILITIES=compute,utility,graphics" in problem
    named = vendor(tmp_path / "nv", "10_nvidia.json", str(tmp_path / "libEGL_nvidia.so.0"))
    problem = egldevice.nvidia_egl_problem({"__EGL_VENDOR_LIBRARY_FILENAMES": str(named)})
    assert problem is not None and "which does not load" in problem  # the file is there, its library is not
    lib = Path(next(p for p in ("/lib/x86_64-linux-gnu/libm.so.6", "/usr/lib/x86_64-linux-gnu/libm.so.6")
                    if Path(p).exists()))
    shutil.copy(lib, tmp_path / "libEGL_nvidia.so.0")  # a loadable library in its place
    assert egldevice.nvidia_egl_problem({"__EGL_VENDOR_LIBRARY_FILENAMES": str(named)}) is None


def test_item7_gpu_check_e_is_skipped_with_the_reason_on_a_gpu_host_without_nvidia_egl(tmp_path: Path,
                                                                                     monkeypatch: pytest.MonkeyPatch):
    from gpu_probe.inventory import Inventory
    from suites.gpucheck import checks as gpu_checks

    vendor(tmp_path, "50_mesa.json", "libEGL_mesa.so.0")
    monkeypatch.setenv("__EGL_VENDOR_LIBRARY_DIRS", str(tmp_path))
    inv = Inventory("h", "linux", "3.11", "cpu", 2, 2, 2, 24000.0,
                    gpus=[{"index": 0, "name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-abc"}])
    ctx = gpu_checks.Context(tmp_path / "root", inv, None, deadline=1e12, say=lambda s: None)
    row = gpu_checks.run_check(ctx, "e", lambda: gpu_checks.egl(ctx))
    assert row.result.startswith("skipped: no NVIDIA EGL vendor library"), row.result
    assert not (tmp_path / "root" / "runs").exists()  # no guest started


# --- 8. NCCL: timeout and /dev/shm ----------------------------------------------------------------------------

def test_item8_nccl_timeout_outlasts_every_wait_a_peer_can_see():
    from suites.config.scenario import ScenarioConfig

    s = ScenarioConfig(name="x")
    assert peer_timeout_s(s.start_timeout_s, s.timeout_s) > s.start_timeout_s + s.timeout_s  # was 300 s flat
    from suites.guest.protocol import GuestSpec

    spec = GuestSpec("g0", "p", "w", {}, {}, [], [], None, 1024)
    assert spec.peer_timeout_s > s.start_timeout_s


def test_item8_a_small_dev_shm_is_refused_for_nccl_ranks_with_the_fix():
    problem = shm_problem(4, 64 * 2**20)  # a container's default
    assert problem is not None and problem.startswith("workload.ranks=4: /dev/shm holds 64 MiB")
    assert "--ipc=host or --shm-size=1g" in problem
    assert shm_problem(4, 16 * 2**30) is None and shm_problem(2, 600 * 2**20) is None


# --- 9. nvcc for the pycuda probe ------------------------------------------------------------------------------

def fake_nvcc(folder: Path, archs: str, code: int = 0) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "nvcc"
    script.write_text(f"#!/bin/sh\necho '{archs}'\nexit {code}\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)


def test_item9_the_probe_needs_an_nvcc_that_knows_the_gpu_and_says_so_before_compiling(tmp_path: Path,
                                                                                     monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert probe.nvcc_problem("90").startswith("nvcc not found: the probe compiles its kernels at run time")
    fake_nvcc(tmp_path / "old", "compute_50\ncompute_60\ncompute_80")
    monkeypatch.setenv("PATH", str(tmp_path / "old"))
    assert "cannot compile for this GPU (sm_90 not among its architectures)" in probe.nvcc_problem("90")
    fake_nvcc(tmp_path / "new", "compute_80\ncompute_90")
    monkeypatch.setenv("PATH", str(tmp_path / "new"))
    assert probe.nvcc_problem("90") is None


# --- 10. the cap under DDP ---------------------------------------------------------------------------------------

def test_item10_the_cap_note_says_what_it_does_not_count_under_ddp():
    t = fake_torch(2)
    context = lambda torch, device: (500.0, "stand-in")  # noqa: E731
    one = torch_common.cap_framebuffer(t, torch_common.rank_device(t, True, 0), 8192, context)
    two = torch_common.cap_framebuffer(t, torch_common.rank_device(t, True, 1), 8192, context, world=2)
    assert "NCCL" not in one["framebuffer_cap"]
    assert two["framebuffer_cap"].endswith("; not counted: NCCL's communicator buffers of the 2 ranks, made after "
                                           "this (outside torch's allocator)")


def test_item10_library_handles_are_made_before_the_context_is_measured():
    made: list[str] = []

    class Recorder:
        def __init__(self, what: str) -> None:
            self.what = what

        def __matmul__(self, other: object) -> None:
            made.append("cublas")

    torch = SimpleNamespace(ones=lambda *a, **k: Recorder("t"),
                            nn=SimpleNamespace(functional=SimpleNamespace(conv2d=lambda *a: made.append("cudnn"))))
    torch_common.warm_handles(torch, "cuda:0")
    assert made == ["cudnn", "cublas"]


def test_pynvml_is_the_nvidia_ml_py_module():
    assert hasattr(pynvml, "nvmlDeviceGetMPSComputeRunningProcesses")  # the call item 5 relies on


# --- 1. GPU utilisation over the timed windows ----------------------------------------------------------------

def test_item1_b2_b3_judge_gpu_util_in_the_guests_timed_windows_not_over_its_whole_life():
    from gpu_probe.sampler import SampleSet
    from gpu_probe.windows import timed_gpu
    from suites.gpucheck import judges as judge

    t0 = 1_700_000_000.0
    busy = [(1.0, 2.0), (3.0, 4.0)]  # two repeats' timed windows, seconds after t0
    rows = [{"t_s": t / 10, "gpu0.util_pct": 98.0 if any(a <= t / 10 <= b for a, b in busy) else 5.0}
            for t in range(0, 60)]  # 6 s of a guest's life at 10 Hz: import, data, compile, evaluation at 5 %
    samples = SampleSet(rows=rows, t0=t0)
    timed = timed_gpu(samples, [(t0 + a, t0 + b) for a, b in busy])
    assert timed["timed.gpu0.util_pct.mean"] == 98.0 and timed["timed.samples"] == 22.0
    assert samples.aggregate()["gpu0.util_pct.mean"] < 40  # what b2/b3 used to judge
    res = {"status": "ok", "host_metrics": {"gpu0.util_pct.mean": 37.0, "energy_J": 900.0}, "sampler": {},
           "guests": [{"result": {"guest_id": "g0", "status": "ok", "error": None, "info": {"device": "H100"},
                                  "metrics": {}, "repeats": [{"images_per_sec": 250_000.0}] * 5},
                       "sampled": timed}]}
    verdict = judge.cifar(res)
    assert verdict.result == "ok" and ("GPU util 98 % in its timed windows (22 samples, the driver's own periods "
                                       "not kept; whole run 37 %)") in verdict.figure
    assert timed_gpu(samples, []) == {}


def test_item1_each_repeat_reports_its_timed_window_in_epoch_seconds():
    import time

    from suites.workloads.base import StepMeter

    meter = StepMeter(2, 30)
    before = time.time()
    meter.start()
    for _ in range(30):
        meter.step(64)
    meter.finish()
    assert meter.window is not None and before <= meter.window[0] <= meter.window[1] <= time.time()
    idle = StepMeter(5, 5)
    idle.start()
    for _ in range(5):
        idle.step(64)
    idle.finish()
    assert idle.window is None  # no timed step: no window to take GPU figures from


# --- 2. repeats a 2 % CoV can stand on ---------------------------------------------------------------------------

def test_item2_translate_moves_each_image_without_a_boolean_mask_host_sync():
    import torch
    from torch.overrides import TorchFunctionMode

    from suites.workloads.fast_recipe import translate

    class MaskIndexing(TorchFunctionMode):
        seen = 0

        def __torch_function__(self, func, types, args=(), kwargs=None):
            names = ("__setitem__", "__getitem__", "nonzero")
            if getattr(func, "__name__", "") in names and any(isinstance(a, torch.Tensor) and a.dtype == torch.bool
                                                             for a in args[1:2]) or func is torch.nonzero:
                MaskIndexing.seen += 1
            return func(*args, **(kwargs or {}))

    images = torch.arange(6 * 1 * 5 * 5, dtype=torch.float32).view(6, 1, 5, 5)
    gen = torch.Generator().manual_seed(3)
    with MaskIndexing():
        out = translate(images, 2, gen)
    assert MaskIndexing.seen == 0  # each was a nonzero() on the GPU: a host sync inside the timed window
    shifts = torch.randint(0, 5, (6, 2), generator=torch.Generator().manual_seed(3))
    padded = torch.nn.functional.pad(images, (2,) * 4, mode="reflect")
    for i, (dy, dx) in enumerate(shifts.tolist()):
        assert torch.equal(out[i], padded[i, :, dy:dy + 5, dx:dx + 5])


def test_item2_later_repeats_keep_the_compiled_model_and_get_fresh_weights():
    import torch

    from suites.workloads.base import GuestContext, StepMeter
    from suites.workloads.torch_common import TorchTrainConfig

    from .test_gpu_paths import Tiny

    w = Tiny(TorchTrainConfig(name="tiny-test", batch_size=32, channels_last=False),
             GuestContext("g0", [0], [], None, {}, seed=1))
    w.prepare()
    model, net = w.model, w.net  # with compile=true, model is the torch.compile wrapper and its graphs
    fresh = {k: v.clone() for k, v in net.state_dict().items()}
    meter = StepMeter(0, w.total_steps())
    meter.start()
    w.train(meter)
    assert not all(torch.equal(fresh[k], v) for k, v in net.state_dict().items())
    w.build()  # the next repeat
    assert w.model is model and w.net is net  # a new model recompiled (and re-recorded CUDA graphs) in the clock
    assert all(torch.equal(fresh[k], v) for k, v in w.net.state_dict().items())
    assert w.compiled_frames() == 0  # no compile here: nothing counted


# --- 3. a container's own PID namespace -------------------------------------------------------------------------

class GrowingNvml(ProcessLists):
    """NVML in a container: the processes it lists are the host's pids (none is this process); the device's used
    memory is what every context on it holds."""

    def __init__(self, used_MiB: float):
        super().__init__(compute=[(999_991, 2**30)])  # another namespace's pid
        self.used_MiB = used_MiB

    def nvmlDeviceGetUUID(self, h):
        return "GPU-abc"

    def nvmlDeviceGetMemoryInfo(self, h):
        return SimpleNamespace(total=81920 * 2**20, used=int(self.used_MiB * 2**20))


class ContextTorch:
    """torch.cuda at its first touch of a GPU that three other guests' contexts already share: its context (530
    MiB, 2 of them the allocator's first block) shows in NVML's device-wide figure."""

    def __init__(self, nvml: GrowingNvml) -> None:
        def start(i: int) -> tuple[int, int]:
            if not self.started:
                self.started, nvml.used_MiB = True, nvml.used_MiB + 530
            return (81920 - int(nvml.used_MiB) - 512) * 2**20, 81920 * 2**20  # free, total (512 MiB reserved)

        self.started = False
        self.cuda = SimpleNamespace(
            get_device_properties=lambda i: SimpleNamespace(uuid="abc", total_memory=81920 * 2**20),
            mem_get_info=start, synchronize=lambda d: None, memory_reserved=lambda i: 2 * 2**20)
        self.nn = SimpleNamespace(functional=SimpleNamespace(conv2d=lambda *a: None))

    class Tensor:
        def __matmul__(self, other: object) -> None:
            return None

    def ones(self, *a, **k) -> "ContextTorch.Tensor":
        return ContextTorch.Tensor()


def test_item3_in_a_pid_namespace_the_context_is_this_processes_own_rise_not_the_whole_device(
        monkeypatch: pytest.MonkeyPatch):
    nvml = GrowingNvml(8192.0)  # three guests' contexts and tensors already there
    monkeypatch.setitem(sys.modules, "pynvml", nvml)
    ctx, how = torch_common.measure_context(ContextTorch(nvml), SimpleNamespace(index=0))
    assert (ctx, how) == (528.0, "NVML device-wide rise, measured alone on the GPU")  # was 9232 MiB: all four


def test_item3_c1_judges_the_guests_self_reported_memory_where_nvml_cannot_attribute_it():
    from suites.gpucheck import judges as judge

    def guest(gid: str, own: float) -> dict:
        return {"result": {"guest_id": gid, "status": "ok", "error": None, "info": {"device": "H100"},
                           "metrics": {"gpu_mem_self_MiB": own}, "repeats": []}, "sampled": {}}

    res = {"status": "ok", "host_metrics": {}, "guests": [guest(f"g{i}", 2000.0) for i in range(4)],
           "sampler": {"notes": ["NVML reports pids of another PID namespace: per-guest GPU figures not attributed"]}}
    verdict = judge.caps(res, 2048)
    assert verdict.result == "ok" and verdict.figure.endswith("of 2048 MiB each (self-reported)")
    assert judge.attribution(res).result.endswith("; c1 judged the guests' self-reported memory")
    assert torch_common.self_reported(1400.0, 600.0) == {"gpu_mem_self_MiB": 2000.0}
    assert torch_common.self_reported(1400.0, None) == {}


def test_item2_b2_b3_say_a_window_too_short_for_a_2_percent_cov():
    from suites.gpucheck import checks as gpu_checks
    from suites.gpucheck import judges as judge

    short = {"status": "ok", "host_metrics": {}, "sampler": {},
             "guests": [{"result": {"guest_id": "g0", "status": "ok", "error": None,
                                    "info": {"device": "H100", "images_per_sec_blank": "0.4 s timed < 1 s"},
                                    "metrics": {}, "repeats": [{"images_per_sec": float("nan")}] * 5},
                         "sampled": {}}]}
    assert judge.cifar(short).result == ("failed: a repeat's timed window carries no rate (0.4 s timed < 1 s): too "
                                         "short for a 2 % CoV")
    assert gpu_checks.CIFAR_EPOCHS >= 10 and gpu_checks.CIFAR_MIN_WINDOW_S >= 1.0  # ~2 s a repeat at the goal
