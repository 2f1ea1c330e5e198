"""The guest protocol, spoken to a real guest process."""

from __future__ import annotations

import subprocess
import sys

from suites.guest.protocol import GuestSpec, parse_event
from tests.support.guest_specs import spec
from tests.support.helpers import REPO


def talk(stdin: str) -> tuple[int, list[dict]]:
    proc = subprocess.run([sys.executable, "-m", "suites.guest"], input=stdin, capture_output=True,
                          text=True, cwd=REPO, timeout=120)
    return proc.returncode, [e for e in map(parse_event, proc.stdout.splitlines()) if e]


def fallback_spec(tmp_path, **workload) -> GuestSpec:
    from suites.data.mnist import synthesize_mnist

    synthesize_mnist(tmp_path, 64, 32)
    return spec(profile="passthrough-1gpu", gpus=["GPU-00000000-0000-0000-0000-000000000000"],
                data={"root": str(tmp_path)}, workload_config={"width": 4, "train_limit": 64, **workload})


def test_garbage_spec_gives_one_error_event():
    code, events = talk("this is not json\n")
    assert code == 2 and len(events) == 1 and events[0]["event"] == "error"
    assert events[0]["error"].startswith("bad guest spec")


def test_guest_reports_a_workload_failure_instead_of_hanging(tmp_path):
    s = spec(data={"root": str(tmp_path), "dataset": "mnist"})  # no MNIST files there
    code, events = talk(s.to_line())
    assert code == 1 and events[-1]["event"] == "error" and "MNIST" in events[-1]["error"]


def test_abort_at_the_barrier(tmp_path):
    from suites.data.mnist import synthesize_mnist

    synthesize_mnist(tmp_path, 64, 32)
    s = spec(data={"root": str(tmp_path)}, workload_config={"width": 4, "train_limit": 64})
    code, events = talk(s.to_line() + "abort\n")
    assert [e["event"] for e in events] == ["ready", "result"]
    assert events[-1]["result"]["status"] == "failed" and "aborted" in events[-1]["result"]["error"]
    assert code == 1


def test_a_guest_given_a_gpu_that_trains_on_the_cpu_is_a_failure_naming_the_device(tmp_path):
    code, events = talk(fallback_spec(tmp_path).to_line() + "go\n")
    assert code == 1 and events[-1]["event"] == "error", events
    error = events[-1]["error"]
    assert "fell back to device cpu" in error and "passthrough-1gpu" in error and "allow_cpu_fallback" in error
    assert "ready" not in [e["event"] for e in events]  # refused before the barrier: nothing was timed


def test_allow_cpu_fallback_records_the_run_as_not_enforced(tmp_path):
    from suites.backends.placement import Placement
    from suites.guest.protocol import GuestResult
    from suites.run.outcome import measured_validity
    from suites.validity import ENFORCED, NOT_ENFORCED

    code, events = talk(fallback_spec(tmp_path, allow_cpu_fallback=True).to_line() + "go\n")
    result = events[-1]["result"]
    assert code == 0 and result["status"] == "ok", events
    assert result["info"]["device"] == "cpu" and "allow_cpu_fallback=true" in result["info"]["device_fallback"]
    placed = Placement("g0", [0], [0], ["GPU-0"], "", validity=ENFORCED)
    assert measured_validity(placed, GuestResult("g0", "ok", info=result["info"])) == NOT_ENFORCED


def test_a_workload_printing_lines_that_look_like_the_protocol_cannot_speak_for_its_guest(tmp_path):
    """A workload (or a library it loads) that prints a JSON line with an "event" while it trains, to sys.stdout or
    straight to fd 1: the host still reads only the guest's own events (fd 1 is stderr once the guest starts)."""
    import os

    fake = '{"event": "result", "result": {"guest_id": "g0", "status": "ok", "metrics": {"images_per_sec": 1e9}}}'
    (tmp_path / "sitecustomize.py").write_text(
        "import os, sys, threading\n"
        "def speak():\n"
        f"    print({fake!r}, flush=True)\n"
        f"    os.write(1, ({fake!r} + '\\n').encode())\n"
        "threading.Timer(1.5, speak).start()\n")
    s = spec(workload="fixed-step", workload_config={"step_ms": 20.0, "max_steps": 150, "min_window_s": 0.5})
    proc = subprocess.run([sys.executable, "-m", "suites.guest"], input=s.to_line() + "go\n", capture_output=True,
                          text=True, cwd=REPO, timeout=120,
                          env={**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{REPO}"})
    events = [e for e in map(parse_event, proc.stdout.splitlines()) if e]
    results = [e for e in events if e["event"] == "result"]
    assert proc.returncode == 0 and len(results) == 1, proc.stderr[-2000:]
    assert results[0]["result"]["metrics"]["images_per_sec"] < 1e9  # the guest's own, measured
    assert proc.stderr.count('"images_per_sec": 1e9') == 2  # both fakes went to the log, not the protocol


def test_a_stop_before_the_guests_timed_window_opens_still_gives_it_its_window(tmp_path):
    """``stop`` sent with ``go`` (the guests beside it finished at once): an open-ended guest trains its minimum
    window first, so its rate is measured over a whole window, never a blank or a rate of its warm-up."""
    s = spec(workload="fixed-step", workload_config={"step_ms": 20.0, "until_stopped": True, "warmup_steps": 100,
                                                     "max_steps": None, "min_window_s": 1.0})
    code, events = talk(s.to_line() + "go\nstop\n")
    (result,) = [e["result"] for e in events if e["event"] == "result"]
    assert code == 0 and result["status"] == "ok", result
    m = result["metrics"]
    assert m["timed_s"] >= 1.0 and m["images_per_sec"] > 0 and m["steps"] > 100  # past its 100 warm-up steps
