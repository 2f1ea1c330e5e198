"""Tests of ``suites/campaign/executor.py`` on a real MLflow store under ``tmp_path`` with the comparisons stood in
for (each records its run under the parent as the real one does, in a millisecond): parts in order under one parent
run, a part past the deadline not started, a part that does not fit not run while the others are, an interrupt
during a part stopping the campaign there with the rest listed, the command still concluding; an interrupt or fault
anywhere else ends the parent run (and what it left RUNNING) KILLED or FAILED with its reason."""

from __future__ import annotations

import contextlib
import io
import math
import time
from pathlib import Path

import pytest
from rich.console import Console

from suites.campaign import Campaign, CampaignPart, CampaignRun, executor
from suites.campaign.executor import Conclusion
from suites.config.compose import compose_run
from suites.config.schema import register_configs
from suites.errors import PlacementError
from suites.record.store_reader import StoreReader
from suites.run.outcome import EXIT_INTERRUPTED
from tests.support.helpers import store_at


def campaign(tmp_path: Path, names: tuple[str, ...] = ("a", "b", "c"), **kw) -> Campaign:
    register_configs()
    uri = store_at(tmp_path / "mlflow.db")
    comp = compose_run(["scenario=single", "workload=fixed-step", f"tracking_uri={uri}",
                        f"artifact_dir={tmp_path / 'art'}"])
    parts = [CampaignPart(n, comp, {"bench.episode": "1"}, estimate_s=kw.pop(f"estimate_{n}", 0.0)) for n in names]
    return Campaign("study", "study", tmp_path / "out", parts, "bench.study_part", **kw)


def comparisons(monkeypatch, codes: dict[str, object]) -> list[str]:
    """Each part's comparison recorded under the parent with its tags, ending with ``codes[name]`` (an exception is
    raised); no cores leased."""
    ran: list[str] = []

    def compared(planned, run_dir, out, nest) -> int:
        name = nest.tags["bench.study_part"]
        ran.append(name)
        ref = nest.recorder.start_parent(f"cmp-{name}", {"bench.kind": "comparison", **nest.tags}, nest.parent)
        got = codes.get(name, 0)
        if isinstance(got, BaseException):
            raise got
        nest.recorder.finish(ref, [], "FINISHED" if got == 0 else "FAILED")
        return int(got)  # type: ignore[arg-type]

    monkeypatch.setattr(executor, "plan_and_lease", lambda *a, **k: (None, contextlib.nullcontext()))
    monkeypatch.setattr(executor, "run_comparison", compared)
    return ran


def test_the_parts_run_in_order_nested_under_one_parent_run_and_the_command_concludes(tmp_path: Path, monkeypatch):
    ran = comparisons(monkeypatch, {"b": 1})
    seen: list[CampaignRun] = []
    text = io.StringIO()
    run = executor.execute(campaign(tmp_path), lambda r: (seen.append(r), Conclusion())[1],
                           Console(file=text, width=200))
    assert ran == ["a", "b", "c"] and seen == [run] and run.concluded and run.stopped == ""
    assert [p.how for p in run.parts] == ["measured"] * 3 and run.code == 1  # the worst part's exit status
    store = StoreReader(run.nest.recorder.tracker.uri)
    parent = store.run(run.nest.parent.run_id)
    assert parent.status == "FAILED" and parent.tags["bench.kind"] == "study"
    assert {c.tags["bench.study_part"]: c.run_id for c in store.children(parent.run_id)} == run.run_ids()
    assert run.run_dir.parent == tmp_path / "out" and run.run_dir.is_dir()
    assert "== study part 2/3: b: measuring (" in text.getvalue()


def test_a_part_past_the_deadline_does_not_start_and_the_others_still_run(tmp_path: Path, monkeypatch):
    ran = comparisons(monkeypatch, {})
    late = campaign(tmp_path, estimate_b=600.0, deadline=time.monotonic() + 300)
    run = executor.execute(late, lambda r: Conclusion(), Console(file=io.StringIO()))
    assert ran == ["a", "c"] and [p.how for p in run.parts] == ["measured", "skipped", "measured"]
    assert run.parts[1].why.startswith("not started: its estimate 600 s is past the ")
    assert "s left of study.budget_s (a study never runs past its budget)" in run.parts[1].why
    assert executor.too_late(late, late.parts[1], late.deadline - 700) == ""


def test_a_part_that_does_not_fit_is_not_run_and_the_others_are(tmp_path: Path, monkeypatch):
    ran, leases = comparisons(monkeypatch, {}), []

    def lease(make, *a, **k):
        leases.append(1)
        if len(leases) == 2:  # the second part
            raise PlacementError("needs 2 GPU(s), this host has 0")
        return None, contextlib.nullcontext()

    monkeypatch.setattr(executor, "plan_and_lease", lease)
    run = executor.execute(campaign(tmp_path), lambda r: Conclusion(), Console(file=io.StringIO()))
    assert ran == ["a", "c"] and [p.how for p in run.parts] == ["measured", "not run", "measured"]
    assert run.parts[1].why == "not measured: needs 2 GPU(s), this host has 0" and run.code == 0


def test_an_interrupt_during_a_part_stops_there_lists_the_rest_and_still_concludes(tmp_path: Path, monkeypatch):
    ran = comparisons(monkeypatch, {"b": KeyboardInterrupt()})
    run = executor.execute(campaign(tmp_path, export=True), lambda r: Conclusion(), Console(file=io.StringIO()))
    assert ran == ["a", "b"] and [p.how for p in run.parts] == ["measured", "measured", "not run"]
    assert run.stopped == "interrupted (Ctrl-C) during b" and run.code == EXIT_INTERRUPTED and run.concluded
    store = StoreReader(run.nest.recorder.tracker.uri)
    parent = store.run(run.nest.parent.run_id)
    assert parent.status == "KILLED" and parent.tags["bench.stopped"] == run.stopped
    a, b = store.children(parent.run_id)  # b: the interrupt escaped its own handling and left it RUNNING
    assert a.status == "FINISHED" and b.status == "KILLED" and b.tags["bench.stopped"] == run.stopped
    assert (run.run_dir / "mlflow-export").is_dir()  # exported after the part that finished


@pytest.mark.heavy
def test_an_interrupt_while_concluding_ends_every_run_under_the_parent_killed(tmp_path: Path, monkeypatch):
    """A Ctrl-C that lands outside a part's own handling (here: while concluding; in life also while a consolidation
    places its next phase): the parent run and what it left RUNNING end KILLED, so none is FINISHED or reused."""
    comparisons(monkeypatch, {"b": KeyboardInterrupt()})

    def conclude(run: CampaignRun) -> Conclusion:
        raise KeyboardInterrupt

    run = executor.execute(campaign(tmp_path), conclude, Console(file=io.StringIO()))
    store = StoreReader(run.nest.recorder.tracker.uri)
    a, b = store.children(run.nest.parent.run_id)  # a finished; b an interrupt left RUNNING
    assert a.status == "FINISHED" and "bench.stopped" not in a.tags
    for r in (store.run(run.nest.parent.run_id), b):
        assert r.status == "KILLED" and r.tags["bench.stopped"].startswith("interrupted (Ctrl-C)"), r.run_id
    assert not run.concluded and run.code == EXIT_INTERRUPTED


def test_a_fault_ends_the_parent_run_failed_with_its_reason_and_is_raised(tmp_path: Path, monkeypatch):
    comparisons(monkeypatch, {"a": RuntimeError("the store went away")})
    runs: list[CampaignRun] = []
    monkeypatch.setattr(executor, "end", lambda run, status, why: runs.append((run, status, why)))
    with pytest.raises(RuntimeError, match="the store went away"):
        executor.execute(campaign(tmp_path), lambda r: Conclusion(), Console(file=io.StringIO()))
    assert [(s, w) for _, s, w in runs] == [("FAILED", "RuntimeError: the store went away")]


def test_a_whole_host_campaign_nothing_of_which_fits_is_one_error_line_before_anything_is_written(
        tmp_path: Path, monkeypatch, capsys):
    def place(*a, **k):
        raise PlacementError("needs 4 GPU(s), this host has 0")

    monkeypatch.setattr(executor, "plan_comparison", place)
    whole = campaign(tmp_path, ("gpus-4",), whole_host=True, left_out=["mnist-tf: tensorflow not installed"],
                     deadline=math.inf)
    capsys.readouterr()  # the store's own set-up lines
    with pytest.raises(SystemExit) as exit_:
        executor.execute(whole, lambda r: Conclusion(), Console(file=io.StringIO()))
    assert exit_.value.code == 2 and not (tmp_path / "out").exists()
    assert capsys.readouterr().err == ("error: nothing of the study can run on this host: mnist-tf: tensorflow not "
                                       "installed; gpus-4: does not fit this host: needs 4 GPU(s), this host has 0\n")
