"""Tests of ``gpu_probe/nvml.py``."""

from __future__ import annotations

import math

import pynvml
import pytest

from gpu_probe import vocab
from gpu_probe.nvml import CLOCK_EVENT_REASONS, NA, Nvml, decode_clock_events
from tests.support.fakes import ProcessLists, RecordedNvml


def test_nvml_used_memory_not_available_stays_unmeasured_not_zero():
    """pynvml gives usedGpuMemory=None where NVML cannot say (unprivileged, MIG): never a silent 0."""
    nv = Nvml(ProcessLists(compute=[(7, None), (8, 300 * 2**20)], graphics=[(8, None)])).open()
    mem = nv.process_memory(0)
    assert math.isnan(mem[7]) and mem[8] == 300.0  # a figure in one list and None in another: the figure


def test_mps_clients_are_listed_by_their_own_call_and_counted_once():
    server, client = 100, 200
    nv = Nvml(ProcessLists(compute=[(server, 30 * 2**20)], mps=[(client, 900 * 2**20), (server, 30 * 2**20)]))
    assert nv.open().process_memory(0) == {server: 30.0, client: 900.0}


def test_each_process_list_is_read_apart_and_a_list_the_binding_lacks_is_absent():
    """What a guest's context is told apart by under MPS: its own client in the MPS list, the server in the compute
    list."""
    server, client = 100, 200
    nv = Nvml(ProcessLists(compute=[(server, 30 * 2**20)], mps=[(client, 900 * 2**20)])).open()
    assert nv.process_lists(0) == {"compute": {server: 30.0}, "graphics": {}, "mps": {client: 900.0}}
    lists = Nvml(ProcessLists(compute=[(7, None)])).open().process_lists(0)
    assert "mps" not in lists and math.isnan(lists["compute"][7])  # an older binding; a figure NVML does not give


def test_pynvml_is_the_nvidia_ml_py_module():
    assert hasattr(pynvml, "nvmlDeviceGetMPSComputeRunningProcesses")  # the call MPS clients are listed by


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
