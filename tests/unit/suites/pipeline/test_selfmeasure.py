"""Tests of ``suites/pipeline/selfmeasure.py``: a failed self-measurement's row says the run's own word on why."""

from __future__ import annotations

import os
import subprocess

from suites.pipeline.selfmeasure import VERDICTS, host_cores, why_failed


def done(stdout: str, stderr: str) -> subprocess.CompletedProcess[str]:
    return subprocess.CompletedProcess(["bench"], 1, stdout, stderr)


def test_the_runs_error_line_comes_first_then_a_guests_failure_then_its_last_plain_line():
    assert why_failed(done("failure: g0 ran out of memory", "error: no such workload 'x'\nTraceback"), "?") == \
        "error: no such workload 'x'"
    assert why_failed(done("", "failure: g0 ran out of memory\nfailure: g1 killed"), "?") == "failure: g1 killed"
    log = "2026-11-29 INFO mlflow started\nRuntimeError: CUDA busy\n2026-11-29 WARNING retry"
    assert why_failed(done("", log), "?") == "RuntimeError: CUDA busy"  # a library's log line is no reason
    assert why_failed(done("", ""), "the bench exited 3") == "the bench exited 3"


def test_host_cores_are_the_cores_this_process_may_use_and_every_verdict_has_words():
    assert host_cores() == (len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count())
    assert set(VERDICTS.values()) >= {"overhead", "within noise"}
