"""Tests of ``gpu_probe/procfs.py``."""

from __future__ import annotations


def test_nvml_pids_of_another_pid_namespace_are_said_not_attributed():
    import os

    from gpu_probe.procfs import foreign_pid_namespace

    ours = {"g0": {os.getpid()}}
    assert not foreign_pid_namespace({os.getpid()}, ours)  # NVML sees the guest's own pid: attribute
    assert not foreign_pid_namespace(set(), ours)  # nothing on the GPU yet: nothing to say
    assert foreign_pid_namespace({4_000_000_001}, ours)  # a host pid that names no process here


def test_a_process_start_is_placed_to_a_clock_tick_not_psutils_whole_second():
    import subprocess
    import sys
    import time

    from gpu_probe.procfs import started_at

    before = time.time()
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(1)"])
    try:
        born = started_at(proc.pid)
    finally:
        proc.wait()
    assert before - 0.02 <= born <= time.time()  # psutil's create_time was up to 1 s off here
    assert abs(started_at() - time.time()) > 0 and started_at(4_000_000_001) <= time.time()  # gone: now
