"""Ctrl-C while a run records (suites/run/shield.py): the record is kept."""

from __future__ import annotations

from pathlib import Path

from tests.support.helpers import runs_of, training, wait_for


# --- a second Ctrl-C while the run is being recorded ---------------------------------------------------------
def test_ctrl_c_while_recording_keeps_the_record(tmp_path: Path):
    """The first Ctrl-C stops the guests; two more, pressed once the table is out (the store is being written),
    are noted and the record completes."""
    import json
    import signal
    import time

    from tests.support.runs import start_idle_pair

    proc, run_dir, uri = start_idle_pair(tmp_path)
    wait_for(lambda: training(run_dir, "g0") and training(run_dir, "g1"))
    proc.send_signal(signal.SIGINT)
    assert proc.stdout is not None
    seen = []
    for line in proc.stdout:  # unbuffered: the summary line comes just before the store is written
        seen.append(line)
        if line.startswith("status: interrupted"):
            for _ in range(2):
                proc.send_signal(signal.SIGINT)
                time.sleep(0.05)  # signals pending at once are one signal
            break
    out, err = proc.communicate(timeout=120)
    out = "".join(seen) + out
    assert proc.returncode == 130, err[-2000:]
    assert "Traceback" not in err, err[-2000:]
    assert "interrupt noted: recording what was measured" in out
    assert json.loads((run_dir / "results.json").read_text())["status"] == "interrupted"
    parents, children = runs_of(uri)
    assert parents.iloc[0]["status"] == "KILLED" and len(children) == 2
