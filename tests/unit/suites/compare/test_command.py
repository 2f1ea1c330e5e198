"""Tests of ``suites/compare/command.py`` (``python -m suites compare``) in this process, on runs recorded by
hand into a real store: bad input is one ``error:`` line and exit 2 before anything is written; two runs compared,
recorded and gated; a history."""

from __future__ import annotations

from pathlib import Path

import pytest

from suites.compare import command
from suites.record.store_reader import StoreReader
from tests.support import compared_runs
from tests.support.helpers import store_at


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = command.main(list(argv))
    got = capsys.readouterr()
    return code, got.out, got.err


@pytest.mark.parametrize(("argv", "said"), [
    ([], "give two runs (A B), or --latest [KIND], or --history FIGURE (got 0 run(s))"),
    (["a"], "give two runs (A B), or --latest [KIND], or --history FIGURE (got 1 run(s))"),
    (["a", "b", "--latest"], "--latest takes the two newest runs itself: give no RUN beside it"),
    (["--history", "x", "a"], "--history FIGURE reads this machine's runs itself: give no RUN or --latest"),
    (["a", "b", "--fail-on", "faster:5"], "--fail-on 'faster:5': give slower:<percent>, e.g. --fail-on slower:5"),
    (["a", "b", "--noise", "0"], "--noise 0: a band in [0.01, 100) %"),
    (["a", "b", "--noise", "1e-200"], "--noise 1e-200: a band in [0.01, 100) %"),  # was a math range error
    (["a", "a"], "A and B are the same run (a): give two runs"),  # was "no change", A never said to be B
])
def test_bad_input_is_one_error_line_and_exit_2_before_anything_is_written(capsys, tmp_path: Path, argv, said):
    uri = store_at(tmp_path / "m.db")
    capsys.readouterr()  # MLflow's own lines as the store is made: not the command's
    code, out, err = run(capsys, *argv, "--tracking-uri", uri, "--out", str(tmp_path / "o"))
    assert (code, out) == (2, "") and len(err.splitlines()) == 1 and err.startswith(f"error: {said}")
    assert not (tmp_path / "o").exists()


def test_a_store_that_is_not_there_and_a_run_that_is_not_there_are_one_line(capsys, tmp_path: Path):
    code, _, err = run(capsys, "a" * 32, "b" * 32, "--tracking-uri", f"sqlite:///{tmp_path / 'none.db'}")
    assert code == 2 and err.startswith(f"error: --tracking-uri sqlite:///{tmp_path / 'none.db'}: no store at")
    uri = store_at(tmp_path / "m.db")  # the first store a test process makes logs MLflow's lines: not the command's
    capsys.readouterr()
    code, _, err = run(capsys, "a" * 32, "b" * 32, "--tracking-uri", uri, "--out", str(tmp_path / "o"))
    assert code == 2 and err.startswith(f"error: {'a' * 32}: no such run in this store") and len(err.splitlines()) == 1


@pytest.mark.heavy
def test_two_comparisons_slower_by_the_gates_rule_exit_1_and_are_recorded_naming_both(capsys, tmp_path: Path):
    uri = store_at(tmp_path / "m.db")
    a = compared_runs.comparison(uri, {"cpu": [100.0, 101.0, 99.0]}, {"workload.step_ms": "5"})
    b = compared_runs.comparison(uri, {"cpu": [83.0, 84.0, 82.0]}, {"workload.step_ms": "6"})
    common = ["--tracking-uri", uri, "--out", str(tmp_path / "o")]
    capsys.readouterr()  # MLflow's own lines as the store was made: not the command's
    code, out, err = run(capsys, a, b, *common, "--fail-on", "slower:5")
    assert code == command.EXIT_GATE and err == ""
    assert "workload.step_ms" in out and "--fail-on slower:5: failed: cpu / mnist-torch images/s slower by" in out
    assert max(len(line) for line in out.splitlines() if not line.startswith("compare: /")) <= 120  # a path: whole
    (folder,) = (tmp_path / "o").iterdir()
    assert {p.name for p in folder.iterdir()} == {"compare.md", "compare.html", "compare.png"}
    (rec,) = [r for r in StoreReader(uri).roots("gpu-mixed-bench") if r.tags.get("bench.role") == "compare"]
    assert (rec.tags["bench.compared_a"], rec.tags["bench.compared_b"]) == (a, b)
    assert rec.metrics["verdicts.slower"] >= 1 and rec.params["fail_on"] == "slower:5"
    code, out, _ = run(capsys, a, b, *common, "--fail-on", "slower:30", "--no-record")
    assert code == 0 and "--fail-on slower:30: passed: no figure slower by more than 30 %" in out


def test_a_history_over_this_machines_runs(capsys, tmp_path: Path, monkeypatch):
    uri = store_at(tmp_path / "m.db")
    for rate in (100.0, 101.0, 99.0):
        compared_runs.bench(uri, rate)
    capsys.readouterr()
    monkeypatch.setattr(command.lookup, "this_machine", lambda inv: "bench-host | Test CPU | 2 | no GPU")
    monkeypatch.setattr(command, "collect", lambda: None)
    code, out, err = run(capsys, "--history", "mnist-torch images/s", "--tracking-uri", uri, "--out",
                         str(tmp_path / "o"))
    assert code == 0 and err == "" and "history of mnist-torch images/s: 3 run(s)" in out
    code, _, err = run(capsys, "--history", "nothing", "--tracking-uri", uri, "--out", str(tmp_path / "o"))
    assert code == 2 and err.startswith("error: --history 'nothing': no run of this machine holds that figure")


def test_a_signal_that_lands_while_the_given_up_record_ends_killed_never_leaves_it_running(capsys, tmp_path: Path,
                                                                                          monkeypatch):
    """Hostile round C22: the third Ctrl-C gave the record up, and the next landed inside ``finish(KILLED)``, which
    ran unshielded: the compare run stayed RUNNING. Here the give-up is a KeyboardInterrupt while the results are
    written, and a real SIGINT lands at the start of the KILLED finish."""
    import os
    import signal

    from mlflow.tracking import MlflowClient

    from suites.record.recorder import Recorder

    uri = store_at(tmp_path / "m.db")
    a, b = compared_runs.bench(uri, 100.0), compared_runs.bench(uri, 90.0)

    def given_up(self, ref, results, folder):
        raise KeyboardInterrupt  # what the Shield raises at its third press

    finish = Recorder.finish

    def interrupted_finish(self, ref, files, status):
        if status == "KILLED":
            os.kill(os.getpid(), signal.SIGINT)  # a fourth press, inside the finish
        return finish(self, ref, files, status)

    monkeypatch.setattr(Recorder, "parent_results", given_up)
    monkeypatch.setattr(Recorder, "finish", interrupted_finish)
    capsys.readouterr()
    with pytest.raises(KeyboardInterrupt):
        command.main([a, b, "--tracking-uri", uri, "--out", str(tmp_path / "o")])
    client = MlflowClient(uri)
    exp = client.get_experiment_by_name("gpu-mixed-bench")
    (rec,) = [r for r in client.search_runs([exp.experiment_id]) if r.data.tags.get("bench.role") == "compare"]
    assert rec.info.status == "KILLED"


@pytest.mark.heavy
def test_a_noise_band_wider_than_the_gates_percent_is_said_beside_the_gate(capsys, tmp_path: Path):
    """Hostile round: --noise 99 silently disarmed --fail-on slower:5 (within the band every figure is no change)."""
    uri = store_at(tmp_path / "m.db")
    a = compared_runs.comparison(uri, {"cpu": [100.0, 101.0, 99.0]})
    b = compared_runs.comparison(uri, {"cpu": [83.0, 84.0, 82.0]})
    capsys.readouterr()
    code, out, _ = run(capsys, a, b, "--tracking-uri", uri, "--out", str(tmp_path / "o"), "--noise", "30",
                       "--fail-on", "slower:5", "--no-record")
    assert code == 0 and "passed: no figure slower by more than 5 %" in out
    said = " ".join(out.split())
    assert "note: --noise 30 is wider than --fail-on slower:5's 5 %: a figure fails the gate only once it lies " \
           "outside the ±30 % band" in said


@pytest.mark.heavy
def test_a_signal_held_off_while_compare_records_ends_its_run_killed_and_exits_130(capsys, tmp_path: Path,
                                                                                    monkeypatch):
    """Round 7: a SIGTERM that landed while compare recorded was noted and dropped (exit 0, the run FINISHED); a
    SIGTERM at any other time killed compare silently (rc -15: it installed no handler). Through the dispatcher, as
    `python -m suites compare` runs: the signal lands inside the shielded FINISHED end; the report and the run are
    whole, the run is ended KILLED naming SIGTERM, exit 130."""
    import os
    import signal

    from mlflow.tracking import MlflowClient

    import suites.commands
    from suites.record.recorder import Recorder
    from suites.run.shield import SIGNALS

    uri = store_at(tmp_path / "m.db")
    a, b = compared_runs.bench(uri, 100.0), compared_runs.bench(uri, 90.0)
    finish = Recorder.finish

    def signalled_finish(self, ref, files, status):
        if status == "FINISHED":
            os.kill(os.getpid(), signal.SIGTERM)
        return finish(self, ref, files, status)

    monkeypatch.setattr(Recorder, "finish", signalled_finish)
    saved = {s: signal.getsignal(s) for s in SIGNALS}
    capsys.readouterr()
    try:
        code = suites.commands.main(["compare", a, b, "--tracking-uri", uri, "--out", str(tmp_path / "o")])
    finally:
        for s, handler in saved.items():
            signal.signal(s, handler)
    err = capsys.readouterr().err
    assert code == 130 and "compare: interrupted (SIGTERM): its run is recorded, ended KILLED" in err, err
    client = MlflowClient(uri)
    exp = client.get_experiment_by_name("gpu-mixed-bench")
    (rec,) = [r for r in client.search_runs([exp.experiment_id]) if r.data.tags.get("bench.role") == "compare"]
    assert rec.info.status == "KILLED" and "SIGTERM" in rec.data.tags["bench.stopped"]
    assert any(p.name == "compare.html" for p in (tmp_path / "o").rglob("*"))


@pytest.mark.heavy
def test_an_interrupt_while_the_report_is_written_leaves_no_report_folder(capsys, tmp_path: Path, monkeypatch):
    """Round 7: compare died on SIGTERM leaving an empty report folder behind."""
    from suites.compare import report

    uri = store_at(tmp_path / "m.db")
    a, b = compared_runs.bench(uri, 100.0), compared_runs.bench(uri, 90.0)
    write = report.write

    def interrupted(comp, folder):
        write(comp, folder)
        raise KeyboardInterrupt  # after its files: the folder exists, half a report

    monkeypatch.setattr(report, "write", interrupted)
    with pytest.raises(KeyboardInterrupt):
        command.main([a, b, "--tracking-uri", uri, "--out", str(tmp_path / "o")])
    assert not any((tmp_path / "o").iterdir())
