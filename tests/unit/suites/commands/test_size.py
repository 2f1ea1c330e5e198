"""Tests of ``suites/commands/size.py`` on recorded consolidations (tests/support/consolidations.py): a busy host's
consolidation gives an inconclusive sizing (its answer, report, MLflow run and reuse) and never a 0; a clean one that
misses QoS at one guest gives 0 with its reason; two CAD user types at two QoS levels give the density table and
the VM to provision."""

from __future__ import annotations

import io
from pathlib import Path

from rich.console import Console

from gpu_probe.inventory import collect
from suites.capacity.size_settings import load_settings
from suites.commands import size
from suites.commands.size_plan import plan_parts
from suites.config.schema import register_configs
from suites.record.recorder import Recorder
from suites.record.store_reader import StoreReader
from suites.render import sizing_report
from tests.support import consolidations
from tests.support.helpers import broken_tokens, store_at

BUSY = "host busy in 15 of 15 phase(s) (other processes up to 180 % of a core > host_busy_pct=25)"
OK = {1: {"frame_ms": 40.4, "p95": 70.0, "rate": 990.0}, 2: {"frame_ms": 41.2, "p95": 80.0, "rate": 960.0},
      4: {"frame_ms": 46.0, "p95": 95.0, "rate": 880.0}}


def planned(tmp_path: Path, *args: str):
    register_configs()
    uri = store_at(tmp_path / "mlflow.db")
    settings = load_settings("default", list(args))
    inv = collect()
    plan = plan_parts(settings, inv, [f"tracking_uri={uri}", f"artifact_dir={tmp_path / 'art'}"],
                      Console(file=io.StringIO()))
    return settings, inv, plan, uri


def recorded(uri: str, part, steps: dict, tags: dict | None = None) -> tuple[tuple[str, str, str], str]:
    rid = consolidations.record(uri, part.comp.cfg.experiment, part.profile, steps,
                                tags={"bench.sizing_key": part.key, **(tags or {})})
    return (part.profile, part.policy, part.user_type), rid


def test_a_busy_hosts_consolidation_gives_an_inconclusive_sizing_everywhere_and_never_a_count(tmp_path: Path):
    from mlflow.tracking import MlflowClient

    settings, inv, plan, uri = planned(tmp_path)
    (part,) = plan.parts
    key, rid = recorded(uri, part, OK, {"bench.host_busy": BUSY})
    said: list[str] = []
    assert size.reusable(StoreReader(uri), part, settings, said.append) is None  # measured again, said
    assert said == [f"size: stored consolidation {rid} is inconclusive: {BUSY}; to size: stop what else runs on "
                    "this host (or raise host_busy_pct) and size again: measuring again"]
    result = size.solve(settings, inv, plan, {key: rid}, uri)
    assert result.doubt.startswith(f"inconclusive: {BUSY}")
    answer = sizing_report.recommendation(result)
    assert answer == [f"20 CAD user(s) + 2 ML job(s) on Tesla M60: {result.doubt}"]
    assert sizing_report.metrics_of(result) == {"inconclusive": 1.0}  # no answer, no profile's count
    files = sizing_report.write(result, tmp_path / "out")
    md, html = (tmp_path / "out" / "sizing.md").read_text(), (tmp_path / "out" / "sizing.html").read_text()
    assert f"- 20 CAD user(s) + 2 ML job(s) on Tesla M60: {result.doubt}" in md and "host busy" in html
    assert f"| medium (20) | strict | {part.profile} | 8 | - | - | - | inconclusive |" in md
    assert "| 1 | 3 |" in md and "| inconclusive | inconclusive |" in md  # the steps: no yes or no
    recorder = Recorder(part.comp.cfg, said.append)
    ref = recorder.start_comparison("sizing-test", {"bench.kind": "sizing"})
    size.record(recorder, ref, settings, result, tmp_path / "out", files)
    run = MlflowClient(uri).get_run(ref.run_id)
    assert run.data.tags["bench.inconclusive"] == result.doubt and run.data.tags["bench.host_busy"] == BUSY
    assert run.data.metrics == {"inconclusive": 1.0} and run.info.status == "FINISHED"


def test_a_clean_consolidation_that_misses_qos_at_one_guest_gives_0_with_its_reason(tmp_path: Path):
    settings, inv, plan, uri = planned(tmp_path)
    (part,) = plan.parts
    key, rid = recorded(uri, part, {1: {"frame_ms": 40.4, "p95": 180.0, "rate": 990.0}})
    result = size.solve(settings, inv, plan, {key: rid}, uri)
    assert not result.doubt and result.answer.recommended is None
    assert sizing_report.recommendation(result) == [
        "20 CAD user(s) + 2 ML job(s) on Tesla M60: no recommendation: no measured profile serves the mix: "
        f"{part.profile}: GPU time allows 0 CAD guest(s) per GPU (point ends at 1 guest(s): cad_p95_frame_ms 180.0 "
        "> 100)"]
    assert sizing_report.metrics_of(result)[f"{part.profile}.n_point"] == 0.0


def test_two_user_types_at_two_qos_levels_give_the_density_table_and_the_vm_to_provision(tmp_path: Path):
    settings, inv, plan, uri = planned(tmp_path, "sizing.users.light=20", "sizing.users.heavy=5",
                                       "sizing.price.gpu=4000", "sizing.price.licence_per_year=450")
    assert [p.label for p in plan.parts] == [f"{p}/time-slice/{t}" for p in (plan.parts[0].profile,)
                                            for t in ("light", "heavy")]
    assert any(n.startswith("CAD users by type (sizing.users): light 20, heavy 5; sizing.mix.cad=20 is not used")
               for n in plan.notes)
    heavy = {1: {"frame_ms": 44.0, "p95": 90.0, "rate": 990.0}, 2: {"frame_ms": 46.0, "p95": 95.0, "rate": 960.0}}
    ids = dict([recorded(uri, plan.parts[0], OK), recorded(uri, plan.parts[1], heavy)])
    result = size.solve(settings, inv, plan, ids, uri)
    cells = {(t, lv, c.profile): cell for t, lv, c, cell in result.density}
    me = plan.parts[0].profile
    assert cells[("light", "strict", me)].per_gpu[0] == 2 and cells[("light", "strict", me)].label == "measured"
    assert cells[("light", "typical", me)].per_gpu[0] == 4  # 15 % CAD slowdown at 4: within typical's 20 %
    assert cells[("heavy", "strict", me)].per_gpu[0] == 0 and cells[("heavy", "typical", me)].per_gpu[0] == 2
    assert cells[("light", "strict", "m60-2q")].label == "framebuffer bound only"
    light = result.provision["light"]
    assert light[0].startswith(f"provision: {me} VMs of ") and "10 GPU(s) in 3 host(s) of 4 GPU(s)" in light[0]
    assert light[1].startswith("ML jobs: the 2 ML job(s) beside the CAD users")
    assert light[2] == "licence: NVIDIA RTX Virtual Workstation (vWS), one per concurrent CAD user"
    answer = sizing_report.recommendation(result)
    assert answer[0].startswith(f"20 light CAD user(s) + 2 ML job(s) on Tesla M60: {me}, 2 CAD guest(s) per GPU, "
                                "10 GPU(s)")
    assert any(line.startswith("5 heavy CAD user(s) on Tesla M60: no recommendation") for line in answer)
    md = sizing_report.markdown(result, [])
    assert "| light (20) | typical |" in md and "| heavy (5) | strict |" in md
    assert "### " + me + " (light users): what the users feel (medians)" in md
    for table in sizing_report.console_tables(result):  # each fits 120 columns with its words whole
        out = Console(width=120, record=True, file=io.StringIO())
        out.print(table)
        lines = out.export_text().splitlines()
        assert max(map(len, lines)) <= 120 and not (broken_tokens(table, lines) if hasattr(table, "columns") else [])


def test_a_stored_figure_that_is_not_a_number_is_skipped_with_a_note_not_a_traceback(tmp_path: Path):
    import sqlite3

    settings, inv, plan, uri = planned(tmp_path)
    (part,) = plan.parts
    key, rid = recorded(uri, part, OK)
    with sqlite3.connect(tmp_path / "mlflow.db") as db:  # a store edited by hand: a string where a figure was
        db.execute("UPDATE metrics SET value = 'abc' WHERE key = 'frames'")
        db.execute("UPDATE latest_metrics SET value = 'abc' WHERE key = 'frames'")
    result = size.solve(settings, inv, plan, {key: rid}, uri)
    assert any(n.startswith(f"consolidation {rid}: ") and "are not numbers, skipped (frames='abc'" in n
               for n in result.notes), result.notes


def test_a_consolidation_another_sizing_measured_while_this_one_waited_is_taken_not_measured_twice(
        tmp_path: Path, monkeypatch):
    """Two sizings of the same thing at once on one store: the second waits for the first's cores; by then the
    first has recorded the consolidation, so the second takes it instead of measuring it again."""
    import contextlib

    import pytest

    settings, inv, plan, uri = planned(tmp_path)
    (part,) = plan.parts
    said: list[str] = []
    recorder = Recorder(part.comp.cfg, said.append)
    ref = recorder.start_comparison("sizing-test", {"bench.kind": "sizing"})
    other: list[str] = []

    def waited(*args, **kwargs):  # the other sizing finishes its consolidation while this one waits for cores
        other.append(recorded(uri, part, OK)[1])
        return None, contextlib.nullcontext()

    monkeypatch.setattr(size, "plan_and_lease", waited)
    monkeypatch.setattr(size, "run_comparison", lambda *a, **k: pytest.fail("measured twice"))
    text = io.StringIO()
    ids, stopped = size.measure(plan.parts, settings, tmp_path / "run", recorder, ref, Console(file=text, width=200),
                                [])
    assert ids == {(part.profile, part.policy, part.user_type): other[0]} and stopped == ""
    assert f"measured meanwhile by another sizing: reused consolidation run {other[0]}" in text.getvalue()


def test_an_interrupt_between_phases_ends_every_run_under_the_sizing_killed(tmp_path: Path):
    """A Ctrl-C that lands while a consolidation places its next phase escapes the consolidation's own handling: the
    sizing's end marks what it left RUNNING (the consolidation, its phase) KILLED, so none is FINISHED or reused."""
    from mlflow.tracking import MlflowClient

    settings, inv, plan, uri = planned(tmp_path)
    (part,) = plan.parts
    recorder = Recorder(part.comp.cfg, [].append)
    ref = recorder.start_comparison("sizing-test", {"bench.kind": "sizing"})
    client = MlflowClient(uri)
    exp = client.get_run(ref.run_id).info.experiment_id
    cons = client.create_run(exp, tags={"mlflow.parentRunId": ref.run_id, "bench.kind": "consolidation"})
    phase = client.create_run(exp, tags={"mlflow.parentRunId": cons.info.run_id, "bench.phase": "m60-2q/cad"})
    size.end_run(recorder, ref, tmp_path, "KILLED", "interrupted (Ctrl-C)")
    for rid in (ref.run_id, cons.info.run_id, phase.info.run_id):
        run = client.get_run(rid)
        assert run.info.status == "KILLED" and run.data.tags["bench.stopped"] == "interrupted (Ctrl-C)", rid
