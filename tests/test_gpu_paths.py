"""The GPU-only lines of the training path, checked on a host without one: a stand-in for ``torch.cuda`` (the
absent hardware) where a line only chooses a device, the real torch on the CPU where it computes."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from suites.backends.placement import Placement
from suites.errors import BenchError, ConfigError
from suites.guest.worker import failure_text
from suites.run.plan import with_ranks
from suites.workloads.base import GuestContext
from suites.workloads.torch_common import (
    TorchClassifier,
    TorchTrainConfig,
    allocator_fraction,
    cap_framebuffer,
    rank_device,
)


class FakeCuda:
    """torch.cuda on a host with ``count`` GPUs of 80 GiB: records the framebuffer fractions set, per device."""

    def __init__(self, count: int) -> None:
        self.count, self.fractions = count, {}

    def is_available(self) -> bool:
        return True

    def device_count(self) -> int:
        return self.count

    def get_device_properties(self, index: int) -> SimpleNamespace:
        assert 0 <= index < self.count
        return SimpleNamespace(total_memory=80 * 2**30)

    def set_per_process_memory_fraction(self, fraction: float, device: int) -> None:
        self.fractions[device] = fraction


def fake_torch(count: int) -> SimpleNamespace:
    return SimpleNamespace(cuda=FakeCuda(count), device=torch.device)


def test_each_rank_trains_on_its_own_gpu_and_caps_that_one():
    t = fake_torch(4)
    devices = [rank_device(t, True, r) for r in range(4)]
    assert [d.index for d in devices] == [0, 1, 2, 3]  # a bare "cuda" put every rank on GPU 0
    no_context = lambda torch, device: (0.0, "stand-in")  # noqa: E731
    assert cap_framebuffer(t, devices[2], 20480, no_context)["framebuffer_cap"].startswith("20480 MiB")
    assert t.cuda.fractions == {2: 0.25}  # the cap lands on rank 2's GPU, not on device 0
    with pytest.raises(RuntimeError, match="rank 4 has no GPU of its own"):
        rank_device(t, True, 4)
    assert rank_device(t, False, 0).type == "cpu"


def test_the_cap_counts_the_cuda_context_as_a_vgpu_framebuffer_does():
    """A stand-in device-memory reading (no GPU here): 610 MiB of CUDA context on an 80 GiB GPU."""
    t = fake_torch(1)
    context = lambda torch, device: (610.0, "stand-in reading")  # noqa: E731
    info = cap_framebuffer(t, rank_device(t, True, 0), 2048, context)
    assert t.cuda.fractions == {0: pytest.approx((2048 - 610) / 81920)}  # (framebuffer - context) / total
    assert info == {"framebuffer_cap": "2048 MiB: allocator 1438 MiB + CUDA context 610 MiB (stand-in reading)",
                    "cuda_context_MiB": 610.0, "allocator_cap_MiB": 1438.0}
    with pytest.raises(BenchError, match=r"^512 MiB framebuffer < 610 MiB CUDA context on this GPU: nothing left"):
        cap_framebuffer(t, rank_device(t, True, 0), 512, context)
    assert allocator_fraction(81920, 0, 81920) == 1.0 and allocator_fraction(10**6, 610, 81920) == 1.0


def test_more_ranks_than_gpus_is_refused_before_start():
    p = Placement("g0", [0], [0], ["GPU-a"])
    assert with_ranks({"ranks": 0}, p, 1)["ranks"] == 1
    with pytest.raises(ConfigError, match="workload.ranks=2: guest g0 gets 1 GPU"):
        with_ranks({"ranks": 2}, p, 1)
    assert with_ranks({"ranks": 2}, Placement("g0", [0], [], []), 1)["ranks"] == 2  # CPU ranks stand in


def test_an_allocation_past_the_cap_is_named_as_such():
    class OutOfMemoryError(RuntimeError):
        pass

    class ResourceExhaustedError(RuntimeError):
        pass

    torch_oom = OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
    assert failure_text(torch_oom).startswith("framebuffer cap exceeded: CUDA out of memory")
    assert failure_text(ResourceExhaustedError("OOM when allocating tensor")).startswith("framebuffer cap exceeded")
    assert failure_text(ValueError("bad")) == "ValueError: bad"


def test_an_allocation_past_the_cap_names_the_cap_and_not_torchs_allocator_advice():
    """c2 on an H200: torch's text says 139 GiB of the GPU is free and suggests expandable_segments."""
    from suites.guest.protocol import GuestSpec

    class OutOfMemoryError(RuntimeError):
        pass

    oom = OutOfMemoryError(
        "CUDA out of memory. Tried to allocate 264.00 MiB. GPU 0 has a total capacity of 139.80 GiB of which 139.00 "
        "GiB is free. Including non-PyTorch memory, this process has 808.00 MiB memory in use. 340.00 MiB allowed; Of "
        "the allocated memory 84.41 MiB is allocated by PyTorch, and 39.59 MiB is reserved by PyTorch but "
        "unallocated. If reserved but unallocated memory is large try setting "
        "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation for Memory "
        "Management  (https://docs.pytorch.org/docs/stable/notes/cuda.html#optimizing-memory-usage-with-pytorch-cuda-"
        "alloc-conf)")
    spec = GuestSpec("g0", "m60-1q", "memory-fill", {}, {}, [0], ["GPU-1"], 1024, 4096)
    text = failure_text(oom, spec)
    assert text.startswith("framebuffer cap exceeded (m60-1q: 1024 MiB, CUDA context included): CUDA out of memory.")
    assert text.endswith("39.59 MiB is reserved by PyTorch but unallocated.") and "expandable_segments" not in text
    whole = GuestSpec("g0", "passthrough-1gpu", "memory-fill", {}, {}, [0], ["GPU-1"], None, 4096)
    assert failure_text(oom, whole).startswith("framebuffer cap exceeded: CUDA out of memory.")  # no cap to name


class Tiny(TorchClassifier):
    name = "tiny-test"
    config_cls = TorchTrainConfig

    def load_data(self):
        g = torch.Generator().manual_seed(0)
        x = torch.randn(100, 1, 8, 8, generator=g)
        return x, torch.randint(0, 10, (100,), generator=g), x[:20], torch.randint(0, 10, (20,), generator=g)

    def build_model(self):
        return torch.nn.Sequential(torch.nn.Conv2d(1, 4, 3), torch.nn.BatchNorm2d(4), torch.nn.ReLU(),
                                   torch.nn.Flatten(), torch.nn.Linear(144, 10))

    def make_optimizer(self, model, total_steps):
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        return opt, torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 1.0)


def test_warm_up_runs_outside_the_timed_region_and_leaves_the_weights_as_built():
    ctx = GuestContext("g0", [0], [], None, {}, seed=1)
    w = Tiny(TorchTrainConfig(name="tiny-test", batch_size=32, channels_last=False), ctx)
    w.prepare()
    assert "warmup_untimed_s" not in ctx.info  # CPU without compile: nothing to warm
    before = {k: v.clone() for k, v in w.net.state_dict().items()}
    seconds = w.warm_up()
    after = w.net.state_dict()
    assert seconds > 0 and all(torch.equal(before[k], after[k]) for k in before)  # BatchNorm stats too
    assert all(p.grad is None for p in w.net.parameters())


def test_egl_device_is_the_guests_gpu_by_uuid_or_pci_never_device_0():
    from suites.workloads.graphics.egldevice import EglDevice, EglDeviceError, choose, pci_key, uuid_text

    raw = bytes.fromhex("11111111222233334444555555555555")
    assert uuid_text(raw) == "GPU-11111111-2222-3333-4444-555555555555"
    assert pci_key("00000000:3B:00.0") == pci_key("0000:3b:00.0") == "0000:3b:00.0"
    devices = [EglDevice(0, "GPU-aaaaaaaa-0000-0000-0000-000000000000", "0000:18:00.0", "/dev/dri/card0"),
               EglDevice(1, uuid_text(raw), "0000:3b:00.0", "/dev/dri/card1"),
               EglDevice(2, None, None, None)]  # Mesa's software device
    assert choose(devices, "GPU-11111111-2222-3333-4444-555555555555", None) == (
        1, "EGL device 1: UUID GPU-11111111-2222-3333-4444-555555555555")
    no_uuid = [EglDevice(d.index, None, d.pci, d.drm) for d in devices]  # a driver without persistent ids
    assert choose(no_uuid, "GPU-11111111-2222-3333-4444-555555555555", "00000000:3B:00.0")[0] == 1
    with pytest.raises(EglDeviceError, match="no EGL device is the guest's GPU GPU-ffff"):
        choose(devices, "GPU-ffff", "00000000:AF:00.0")


def test_nvml_pids_of_another_pid_namespace_are_said_not_attributed():
    import os

    from gpu_probe.procfs import foreign_pid_namespace

    ours = {"g0": {os.getpid()}}
    assert not foreign_pid_namespace({os.getpid()}, ours)  # NVML sees the guest's own pid: attribute
    assert not foreign_pid_namespace(set(), ours)  # nothing on the GPU yet: nothing to say
    assert foreign_pid_namespace({4_000_000_001}, ours)  # a host pid that names no process here


def test_a_cad_guest_in_a_vm_names_its_gpu_by_index_through_nvml_and_picks_that_egl_device(
        monkeypatch: pytest.MonkeyPatch):
    """Inside a VM the guest's GPU is "0" (the VM's own, numbered from 0): NVML's device of that index gives its UUID
    and PCI address, and the EGL device is matched by them as on a host, not taken by EGL's own numbering. No GPU
    here: a recorded vGPU guest's NVML answers stand in for the VM's driver, and the EGL device list for its EGL."""
    from gpu_probe.trace import TRACE_ENV
    from suites.workloads.base import GuestContext
    from suites.workloads.graphics import egldevice
    from suites.workloads.graphics.egldevice import EglDevice
    from suites.workloads.graphics.replay import GraphicsReplay, GraphicsReplayConfig

    from .helpers import REPO

    monkeypatch.setenv(TRACE_ENV, str(REPO / "tests" / "traces" / "m60-8q-vgpu-guest.json"))
    listed = [EglDevice(0, None, None, None),  # Mesa's software device comes first
              EglDevice(1, "GPU-5e1a7c3b-0000-4c2d-9e8f-0a1b2c3d4e58", "0000:02:01.0", "/dev/dri/card0")]
    monkeypatch.setattr(egldevice, "list_devices", lambda libegl=None: listed)
    ctx = GuestContext("g0", [0], ["0"], None, {}, 0)
    assert GraphicsReplay(GraphicsReplayConfig(), ctx).egl_device() == 1
    assert ctx.info["egl_device"] == "EGL device 1: UUID GPU-5e1a7c3b-0000-4c2d-9e8f-0a1b2c3d4e58"
