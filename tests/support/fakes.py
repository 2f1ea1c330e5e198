"""Stand-ins for absent hardware and libraries: an NVML that answers from a record (``RecordedNvml``,
``ProcessLists``), a torch whose CUDA reports N devices (``fake_torch``), a tiny classifier (``Tiny``), an EGL vendor
file (``vendor``)."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pynvml
import torch

from suites.workloads.torch_common import TorchClassifier, TorchTrainConfig


class RecordedNvml:
    """One recorded GPU; ``fail`` maps function names to NVML error codes."""

    NVMLError = pynvml.NVMLError
    NVML_CLOCK_SM, NVML_CLOCK_MEM, NVML_TEMPERATURE_GPU = 1, 2, 0

    def __init__(self, fail: dict[str, int] | None = None, lost_after: int | None = None):
        self.fail = fail or {}
        self.lost_after = lost_after  # device calls after which the GPU "falls off the bus"
        self.device_calls = 0

    def __getattr__(self, name: str):
        raise AttributeError(name)  # a function this driver's binding does not have

    def _call(self, name: str, value):
        if name.startswith("nvmlDevice"):
            self.device_calls += 1
            if self.lost_after is not None and self.device_calls > self.lost_after:
                raise pynvml.NVMLError(pynvml.NVML_ERROR_GPU_IS_LOST)
        if name in self.fail:
            raise pynvml.NVMLError(self.fail[name])
        return value

    def nvmlInit(self): pass  # noqa: E704
    def nvmlShutdown(self): pass  # noqa: E704
    def nvmlDeviceGetCount(self): return self._call("nvmlDeviceGetCount", 1)  # noqa: E704
    def nvmlDeviceGetHandleByIndex(self, i): return self._call("nvmlDeviceGetHandleByIndex", f"h{i}")  # noqa: E704
    def nvmlDeviceGetName(self, h): return self._call("nvmlDeviceGetName", "Tesla M60")  # noqa: E704
    def nvmlDeviceGetUUID(self, h): return self._call("nvmlDeviceGetUUID", "GPU-abc")  # noqa: E704

    def nvmlDeviceGetMemoryInfo(self, h):
        return self._call("nvmlDeviceGetMemoryInfo", SimpleNamespace(total=8192 * 2**20, used=1536 * 2**20))

    def nvmlDeviceGetUtilizationRates(self, h):
        return self._call("nvmlDeviceGetUtilizationRates", SimpleNamespace(gpu=87, memory=40))

    def nvmlDeviceGetPowerUsage(self, h): return self._call("nvmlDeviceGetPowerUsage", 123456)  # noqa: E704
    def nvmlDeviceGetClockInfo(self, h, k): return self._call("nvmlDeviceGetClockInfo", 1177)  # noqa: E704
    def nvmlDeviceGetTemperature(self, h, k): return self._call("nvmlDeviceGetTemperature", 61)  # noqa: E704

    def nvmlDeviceGetCurrentClocksEventReasons(self, h):
        return self._call("nvmlDeviceGetCurrentClocksEventReasons", 1)

    def nvmlDeviceGetComputeRunningProcesses(self, h):
        procs = [SimpleNamespace(pid=4242, usedGpuMemory=512 * 2**20)]
        return self._call("nvmlDeviceGetComputeRunningProcesses", procs)

    def nvmlDeviceGetGraphicsRunningProcesses(self, h):
        return self._call("nvmlDeviceGetGraphicsRunningProcesses", [SimpleNamespace(pid=4242, usedGpuMemory=None)])

    def nvmlSystemGetDriverVersion(self): return "535.54"  # noqa: E704
    def nvmlSystemGetCudaDriverVersion_v2(self): return 12020  # noqa: E704


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


def vendor(folder: Path, name: str, library: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(json.dumps({"file_format_version": "1.0.0", "ICD": {"library_path": library}}))
    return folder / name


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


class Tiny(TorchClassifier):
    name = "tiny-test"
    config_cls = TorchTrainConfig

    def load_data(self):
        g = torch.Generator().manual_seed(0)
        x, y = torch.randn(100, 1, 8, 8, generator=g), torch.randint(0, 10, (100,), generator=g)
        rows = self.train_rows(len(x))
        return x[rows], y[rows], x[:20], torch.randint(0, 10, (20,), generator=g)

    def build_model(self):
        return torch.nn.Sequential(torch.nn.Conv2d(1, 4, 3), torch.nn.BatchNorm2d(4), torch.nn.ReLU(),
                                   torch.nn.Flatten(), torch.nn.Linear(144, 10))

    def make_optimizer(self, model, total_steps):
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        return opt, torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 1.0)
