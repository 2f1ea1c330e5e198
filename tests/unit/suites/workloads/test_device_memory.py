"""Tests of ``suites/workloads/device_memory.py``: a guest's CUDA context measured on recorded NVML figures (its own
pid's; in a container or under MPS the one client that appeared in its turn, never an MPS server or another guest),
and its own count of its GPU memory."""

from __future__ import annotations

import os
import sys
from types import SimpleNamespace

import pytest

from suites.workloads import device_memory
from suites.workloads.device_memory import client_MiB, self_reported
from tests.support.fakes import ProcessLists


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


def test_a_context_nvml_lists_without_a_figure_is_measured_another_way(monkeypatch: pytest.MonkeyPatch):
    """nvml_process_MiB: None (cannot say), so measure_context falls back, never a context of 0 MiB."""
    lib = ProcessLists(compute=[(os.getpid(), None)])
    lib.nvmlDeviceGetUUID = lambda h: "GPU-abc"
    monkeypatch.setitem(sys.modules, "pynvml", lib)
    assert device_memory.nvml_process_MiB("GPU-abc") is None
    lib.lists["compute"] = [(os.getpid(), 700 * 2**20)]
    assert device_memory.nvml_process_MiB("abc") == 700.0


def test_library_handles_are_made_before_the_context_is_measured():
    made: list[str] = []

    class Recorder:
        def __init__(self, what: str) -> None:
            self.what = what

        def __matmul__(self, other: object) -> None:
            made.append("cublas")

    torch = SimpleNamespace(ones=lambda *a, **k: Recorder("t"),
                            nn=SimpleNamespace(functional=SimpleNamespace(conv2d=lambda *a: made.append("cudnn"))))
    device_memory.warm_handles(torch, "cuda:0")
    assert made == ["cudnn", "cublas"]


def test_in_a_pid_namespace_the_context_is_this_processes_own_rise_not_the_whole_device(
        monkeypatch: pytest.MonkeyPatch):
    nvml = GrowingNvml(8192.0)  # three guests' contexts and tensors already there
    monkeypatch.setitem(sys.modules, "pynvml", nvml)
    ctx, how = device_memory.measure_context(ContextTorch(nvml), SimpleNamespace(index=0))
    assert (ctx, how) == (528.0, "NVML device-wide rise, measured alone on the GPU")  # was 9232 MiB: all four




def test_a_guest_reports_what_its_allocator_reserved_and_what_its_tensors_needed_with_the_context():
    assert self_reported(1400.0, 300.0, 600.0) == {"gpu_mem_self_MiB": 2000.0, "gpu_mem_need_MiB": 900.0}
    assert self_reported(1400.0, 300.0, None) == {}  # the whole GPU: no context measured, no figure


class MpsContainerNvml(GrowingNvml):
    """Recorded NVML of a container under MPS (the H200's: pids of the host's namespace): before the guest's turn
    another guest (an MPS client) is there; the guest's first touch starts the MPS server (in the compute list, 310
    MiB) and its own client (in the MPS list, 530 MiB): the device-wide rise is both."""

    def __init__(self, mps: bool = True) -> None:
        super().__init__(8192.0)
        self.lists = {"compute": [(999_990, 310 * 2**20)] if not mps else [], "graphics": []}
        if mps:
            self.lists["mps"] = [(999_991, 2**30)]

    def start(self) -> None:
        if "mps" in self.lists:
            self.lists["compute"] = [(999_992, 310 * 2**20)]  # the server, started with this guest's client
            self.lists["mps"] = [*self.lists["mps"], (999_993, 530 * 2**20)]
            self.used_MiB += 310 + 530
        else:
            self.lists["compute"] = [*self.lists["compute"], (999_993, 530 * 2**20)]
            self.used_MiB += 530


class StartingTorch(ContextTorch):
    def __init__(self, nvml: MpsContainerNvml) -> None:
        super().__init__(nvml)
        started = self.cuda.mem_get_info

        def start(i: int) -> tuple[int, int]:
            if not self.started:
                nvml.start()
                nvml.used_MiB -= 530  # ContextTorch's own start adds the context's 530 once more
            return started(i)

        self.cuda.mem_get_info = start


@pytest.mark.parametrize("mps", [True, False])
def test_in_a_container_the_context_is_the_one_client_that_appeared_in_its_turn_never_the_mps_server(
        monkeypatch: pytest.MonkeyPatch, mps: bool):
    """The device-wide rise under MPS was the server's 310 MiB and the client's 530 (838 after the allocator's 2):
    a need larger than m60-1q's framebuffer allows, as a sizing once refused it."""
    nvml = MpsContainerNvml(mps)
    monkeypatch.setitem(sys.modules, "pynvml", nvml)
    ctx, how = device_memory.measure_context(StartingTorch(nvml), SimpleNamespace(index=0))
    which = "MPS client" if mps else "compute process"
    assert (ctx, how) == (528.0, f"NVML: the {which} that appeared on the GPU during this guest's turn")


def test_who_appeared_is_said_only_where_one_did_with_a_figure():
    before = {"compute": {1: 300.0}, "mps": {2: 500.0}}
    assert client_MiB(before, {"compute": {1: 300.0, 3: 310.0}, "mps": {2: 500.0, 4: 530.0}}) == (530.0, "MPS client")
    assert client_MiB(before, {"compute": {1: 300.0, 3: 310.0}, "mps": {2: 500.0}}) == (None, "")  # only the server
    assert client_MiB(before, {"compute": {1: 300.0}, "mps": {2: 500.0, 4: 530.0, 5: 520.0}}) == (None, "")  # two
    assert client_MiB({}, {"compute": {7: float("nan")}}) == (None, "")  # listed without a figure: cannot say
    assert client_MiB({"compute": {1: 300.0}}, {"compute": {1: 300.0, 7: 530.0}}) == (530.0, "compute process")
