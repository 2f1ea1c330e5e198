"""``make compare`` on real runs recorded by the real bench command on this host: two comparisons of the fixed-step
workload at 5 and 6 ms a step (3 repeats each) are slower with an interval that excludes 1 and the set-up's one
difference; the same settings twice are never faster or slower; a run beside a CPU burner is marked, no verdict;
runs of different kinds are one line; the gate's exit codes; ``make compare`` as a user types it."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.helpers import REPO, cpu_burner, run_bench, store_at

FIXED = ["scenario=gpu-vs-cpu", "workload=fixed-step", "scenario.repeats=3", "workload.min_window_s=1",
         "progress=quiet"]
QUIET = "host_busy_pct=100000"  # these runs test the verdicts, not the busy judgement (CI's other worker is busy)
IMAGES = "cpu / fixed-step images/s"


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """Four comparisons into one store: A at 5 ms, B at 6 ms, C at 5 ms again, D at 5 ms beside a CPU burner."""
    tmp = tmp_path_factory.mktemp("compare")
    uri = store_at(tmp / "mlflow.db")
    out: dict[str, object] = {"uri": uri, "tmp": tmp}
    same = f"data.root={tmp / 'no-real-data'}"  # one data root for all: a different one is a set-up difference
    for name, ms, extra in (("A", 5, QUIET), ("B", 6, QUIET), ("C", 5, QUIET), ("D", 5, "host_busy_pct=25")):
        # D's burner niced: the host seen busy is what D tests (its 5 ms steps are sleeps, not slowed by it)
        with cpu_burner(1, niceness=19) if name == "D" else contextlib.nullcontext():
            run = run_bench(tmp / name, *FIXED, f"workload.step_ms={ms}", extra, same, f"tracking_uri={uri}")
        assert run.proc.returncode == 0, run.proc.stderr[-3000:]
        out[name] = str(run.run_dir)
    return out


def compare(runs: dict[str, object], *argv: str) -> subprocess.CompletedProcess[str]:
    tmp = runs["tmp"]
    return subprocess.run([sys.executable, "-m", "suites", "compare", *argv, "--tracking-uri", str(runs["uri"]),
                           "--out", f"{tmp}/out"], cwd=REPO, capture_output=True, text=True, timeout=300)


def row(out: str, figure: str) -> str:
    return next(line for line in out.splitlines() if f" {figure} " in line)


@pytest.mark.slow(minutes=2)  # its module goes first (tests/conftest.py)
def test_a_slower_step_is_slower_with_an_interval_that_excludes_1_and_the_one_set_up_difference(runs):
    proc = compare(runs, str(runs["A"]), str(runs["B"]), "--no-record")
    assert proc.returncode == 0, proc.stderr
    line = row(proc.stdout, IMAGES)
    low, high = (float(x) for x in re.search(r"\[([\d.]+), ([\d.]+)\]", line).groups())
    assert high < 1.0 and low > 0.7 and line.rstrip(" │").endswith("slower")  # 5/6 = 0.83
    assert re.search(r"│ config\s+│ workload.step_ms\s+│\s+5\s+│\s+6\s+│", proc.stdout)
    assert proc.stdout.split("figures:")[0].count("│ config ") == 1  # the one difference: nothing of the host
    assert max(len(x) for x in proc.stdout.splitlines()) <= 120


def test_the_same_settings_twice_are_never_faster_or_slower(runs):
    # A and C ran minutes apart beside CI's other workers with the busy judgement off (QUIET): a 5 ms sleeping step
    # stretched that much more in one of them that a fresh-clone CI called C 'slower' at the default band. The band
    # is what such a load moves this step by; a verdict past it is still a false one (B, 20 % slower, is gated at 5)
    proc = compare(runs, str(runs["A"]), str(runs["C"]), "--no-record", "--noise", "15")
    assert proc.returncode == 0, proc.stderr
    assert "set-up: same set-up" in proc.stdout
    verdict = row(proc.stdout, IMAGES).rstrip(" │").rsplit("│", 1)[1].strip()
    assert verdict == "no change" or verdict.startswith("inconclusive"), verdict


def test_a_run_beside_a_cpu_burner_is_marked_and_gets_no_verdict(runs):
    proc = compare(runs, str(runs["A"]), str(runs["D"]), "--no-record", "--fail-on", "slower:0")
    assert proc.returncode == 0, proc.stderr  # a marked figure is never gated
    assert "marked (B: host busy" in row(proc.stdout, IMAGES)
    said = [ln for ln in proc.stdout.splitlines() if ln.startswith("marked: B: host busy in ")]
    assert len(said) == 1 and " in 6 of 6 runs: " in said[0], proc.stdout  # once for the run, over its 2 x 3 phases
    assert "host busy (host busy" not in proc.stdout


def test_the_gate_exits_1_naming_the_slower_figure_and_the_run_is_recorded(runs):
    proc = compare(runs, str(runs["A"]), str(runs["B"]), "--fail-on", "slower:5")
    assert proc.returncode == 1, proc.stderr
    # the gate names a slower images/s figure: the cpu arm's, or (where CI's other worker made that repeat host busy:
    # marked, never gated: seen once in a fresh-clone CI) the 1-gpu arm's; both are 5 vs 6 ms steps
    assert re.search(r"^--fail-on slower:5: failed: (cpu|1-gpu) / fixed-step images/s slower by ", proc.stdout,
                     re.M), proc.stdout
    assert re.search(r"^mlflow: run [0-9a-f]{32} \(A and B in its tags", proc.stdout, re.M)
    assert compare(runs, str(runs["A"]), str(runs["B"]), "--fail-on", "slower:50", "--no-record").returncode == 0


def test_a_bench_run_against_a_comparison_is_one_line(runs, tmp_path: Path):
    bench = run_bench(tmp_path, "+preset=smoke", "workload=fixed-step", "progress=quiet",
                      f"tracking_uri={runs['uri']}")
    assert bench.proc.returncode == 0, bench.proc.stderr[-2000:]
    proc = compare(runs, str(runs["A"]), str(bench.run_dir))
    assert proc.returncode == 2 and proc.stdout == ""
    (line,) = [x for x in proc.stderr.splitlines() if x.startswith("error:")]
    assert re.fullmatch(r"error: A gpu-vs-cpu-run \(\w{8}\) is a comparison run and B run \(\w{8}\) a bench run: "
                        r"compare runs of one kind", line), line


def test_make_compare_as_a_user_types_it(runs):
    proc = subprocess.run(["make", "--no-print-directory", "compare", f"A={runs['A']}", f"B={runs['B']}",
                           f"ARGS=--tracking-uri {runs['uri']} --out {runs['tmp']}/make-out --no-record"],
                          cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    ours = proc.stdout[proc.stdout.index("compare: A = "):]
    assert IMAGES in ours and max(len(x) for x in ours.splitlines()) <= 120


@pytest.mark.parametrize("after_s", [0.05, 0.15, 0.25])
def test_repeated_signals_while_compare_records_leave_no_run_running(tmp_path: Path, after_s: float):
    """Hostile round C22: 5-8 SIGINTs 20 ms apart while ``make compare`` recorded left its run RUNNING (the Shield
    gave up, and the next signal landed inside the KILLED finish). Run in its own process group, the signals sent
    to the group as a terminal sends Ctrl-C, at several moments after its tables are shown (while it records)."""
    import time

    from mlflow.tracking import MlflowClient

    from tests.support import compared_runs

    uri = store_at(tmp_path / "mlflow.db")
    a, b = compared_runs.bench(uri, 100.0), compared_runs.bench(uri, 90.0)
    proc = subprocess.Popen([sys.executable, "-m", "suites", "compare", a, b, f"--tracking-uri={uri}",
                             f"--out={tmp_path / 'out'}"], cwd=REPO, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        for line in proc.stdout:  # type: ignore[union-attr]
            if line.startswith("compare: A = "):
                break
        time.sleep(after_s)
        for _ in range(8):
            if proc.poll() is not None:
                break
            os.killpg(proc.pid, signal.SIGINT)
            time.sleep(0.02)
        text = proc.communicate(timeout=60)[0]
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    client = MlflowClient(uri)
    exp = client.get_experiment_by_name("gpu-mixed-bench")
    compares = [r for r in client.search_runs([exp.experiment_id]) if r.data.tags.get("bench.role") == "compare"]
    assert all(r.info.status in ("FINISHED", "KILLED") for r in compares), (
        [r.info.status for r in compares], text[-2000:])


@pytest.mark.parametrize("after_s", [0.2, 0.6, 1.2])
def test_ctrl_c_while_compare_starts_is_one_line(tmp_path: Path, after_s: float):
    """Hostile round: Ctrl-C while its libraries load, or before its guards, printed a KeyboardInterrupt traceback.
    SIGINT to its own process group, as a terminal sends it: exit 130, one line, nothing written."""
    import time

    proc = subprocess.Popen([sys.executable, "-m", "suites", "compare", "--latest", f"--out={tmp_path / 'out'}",
                             f"--tracking-uri={store_at(tmp_path / 'mlflow.db')}"], cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        time.sleep(after_s)
        os.killpg(proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    if proc.returncode == 2:  # it had ended already (an empty store: nothing to compare): a host faster than this
        return
    # 130, or ended by SIGINT itself (-2; a shell's $? is 130 either way): CPython exits so when the interrupt
    # passed through code a C extension ran with PyRun_* while importing, even though the command caught it
    assert proc.returncode in (130, -signal.SIGINT) and "Traceback" not in err, err[-2000:]
    assert [ln for ln in err.splitlines() if ln.strip()] == ["compare: interrupted (Ctrl-C)"], err
    assert not (tmp_path / "out").exists()


def test_an_unreachable_server_is_said_so_not_no_such_run(tmp_path: Path):
    """Hostile round: an unreachable tracking server read as 'no such run'."""
    from tests.support.helpers import free_port, one_error_line

    done = subprocess.run([sys.executable, "-m", "suites", "compare", "0" * 32, "f" * 32,
                           f"--tracking-uri=http://127.0.0.1:{free_port()}", f"--out={tmp_path / 'out'}"], cwd=REPO,
                          capture_output=True, text=True, timeout=120)
    line = one_error_line(done)
    assert "tracking server unreachable" in line and "no such run" not in line, line
    assert not (tmp_path / "out").exists()
