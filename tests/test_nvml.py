"""The NVML wrapper: the real no-GPU path here, and recorded GPUs for the rest.

The recorded stand-in replaces only the hardware: it answers with the
pynvml API names and raises pynvml's own error classes.
"""

import math
from types import SimpleNamespace

import pynvml
import pytest

from gpu_probe import inventory, vocab
from gpu_probe.nvml import NA, Nvml
from gpu_probe.sampler import Sampler


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


def test_no_gpu_here_is_explicit_not_a_crash():
    nv = Nvml().open()
    if nv.available:
        pytest.skip("this machine has a working NVML")
    assert "no GPU" in nv.reason
    assert nv.device_count() == 0 and nv.query(lambda lib: lib.nvmlDeviceGetCount()) is NA
    inv = inventory.collect()
    assert inv.gpus == [] and inv.gpu_status.startswith("no GPU")
    assert inv.as_params()["host.gpu_names"] == "no GPU"


def test_recorded_gpu_sample_in_vocabulary_units():
    nv = Nvml(RecordedNvml()).open()
    s = nv.sample(0)
    assert s[vocab.GPU_UTIL.key] == 87 and s[vocab.GPU_MEM_USED.key] == 1536.0
    assert s[vocab.POWER.key] == pytest.approx(123.456) and s[vocab.TEMPERATURE.key] == 61
    assert nv.process_memory(0) == {4242: 512.0}
    assert nv.system_info()["cuda_driver_version"] == "12.2"


def test_not_supported_field_becomes_na_and_the_rest_survives():
    nv = Nvml(RecordedNvml(fail={"nvmlDeviceGetPowerUsage": pynvml.NVML_ERROR_NOT_SUPPORTED})).open()
    s = nv.sample(0)
    assert s[vocab.POWER.key] is NA and not s[vocab.POWER.key]
    assert s[vocab.GPU_UTIL.key] == 87


def test_old_binding_falls_back_to_throttle_reasons():
    lib = RecordedNvml(fail={"nvmlDeviceGetCurrentClocksEventReasons": pynvml.NVML_ERROR_FUNCTION_NOT_FOUND})
    lib.nvmlDeviceGetCurrentClocksThrottleReasons = lambda h: 4
    assert Nvml(lib).open().sample(0)[vocab.CLOCK_EVENTS.key] == 4


def test_gpu_lost_mid_run_keeps_sampling_with_missing_values():
    import time

    sampler = Sampler(rate_hz=50, nvml=Nvml(RecordedNvml(lost_after=40)))
    with sampler:
        time.sleep(0.6)
    util = [r["gpu0.util_pct"] for r in sampler.rows]
    assert util[0] == 87 and math.isnan(util[-1])  # readings before the loss, NaN after
    assert sampler.errors == 0 and len(sampler.rows) > 10
    assert sampler.aggregate("gpu0.")["util_pct.max"] == 87
