"""Tests of ``gpu_probe/procfs.py``."""

from __future__ import annotations


def test_nvml_pids_of_another_pid_namespace_are_said_not_attributed():
    import os

    from gpu_probe.procfs import foreign_pid_namespace

    ours = {"g0": {os.getpid()}}
    assert not foreign_pid_namespace({os.getpid()}, ours)  # NVML sees the guest's own pid: attribute
    assert not foreign_pid_namespace(set(), ours)  # nothing on the GPU yet: nothing to say
    assert foreign_pid_namespace({4_000_000_001}, ours)  # a host pid that names no process here
