"""Tests of ``suites/sizing/conclude.py`` (and the reuse rule of ``results.py``) on recorded consolidations
(tests/support/consolidations.py): a busy host's consolidation gives an inconclusive sizing (its answer, report,
MLflow run and reuse) and never a 0; a clean one that misses QoS at one guest gives 0 with its reason; two CAD user
types at two QoS levels give the density table and the VM to provision."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console

from suites.record.recorder import Recorder
from suites.record.store_reader import StoreReader
from suites.sizing import conclude, report, results
from tests.support.consolidations import planned_sizing as planned
from tests.support.consolidations import recorded
from tests.support.helpers import broken_tokens

BUSY = "host busy in 15 of 15 phase(s) (other processes up to 180 % of a core > host_busy_pct=25)"
OK = {1: {"frame_ms": 40.4, "p95": 70.0, "rate": 990.0}, 2: {"frame_ms": 41.2, "p95": 80.0, "rate": 960.0},
      4: {"frame_ms": 46.0, "p95": 95.0, "rate": 880.0}}


@pytest.mark.heavy
def test_a_busy_hosts_consolidation_gives_an_inconclusive_sizing_everywhere_and_never_a_count(tmp_path: Path):
    from mlflow.tracking import MlflowClient

    settings, inv, plan, uri = planned(tmp_path)
    (part,) = plan.parts
    key, rid = recorded(uri, part, OK, {"bench.host_busy": BUSY})
    said: list[str] = []
    assert results.reusable(StoreReader(uri), part, settings, said.append) is None  # measured again, said
    assert said == [f"size: stored consolidation {rid} is inconclusive: {BUSY}; to size: stop what else runs on "
                    "this host (or raise host_busy_pct) and size again: measuring again"]
    result = conclude.solve(settings, inv, plan, {key: rid}, uri)
    assert result.doubt.startswith(f"inconclusive: {BUSY}")
    said_answer = report.recommendation(result)
    assert said_answer == [f"20 CAD user(s) + 2 ML user(s) on Tesla M60: {result.doubt}"]
    assert report.metrics_of(result) == {"inconclusive": 1.0}  # no answer, no profile's count
    files = report.write(result, tmp_path / "out")
    md, html = (tmp_path / "out" / "sizing.md").read_text(), (tmp_path / "out" / "sizing.html").read_text()
    assert f"- 20 CAD user(s) + 2 ML user(s) on Tesla M60: {result.doubt}" in md and "host busy" in html
    assert f"| medium (20) | strict | {part.profile} | 8 | - | - | - | inconclusive |" in md
    assert "| 1 | 3 |" in md and "| inconclusive | inconclusive |" in md  # the counts: no yes or no
    recorder = Recorder(part.comp.cfg, said.append)
    ref = recorder.start_parent("sizing-test", {"bench.kind": "sizing"})
    recorder.parent_results(ref, conclude.results_of(settings, result), tmp_path / "out")
    recorder.finish(ref, files, "FINISHED")
    run = MlflowClient(uri).get_run(ref.run_id)
    assert run.data.tags["bench.inconclusive"] == result.doubt and run.data.tags["bench.host_busy"] == BUSY
    assert run.data.metrics == {"inconclusive": 1.0} and run.info.status == "FINISHED"


@pytest.mark.heavy
def test_a_clean_consolidation_that_misses_qos_at_one_guest_gives_0_with_its_reason(tmp_path: Path):
    settings, inv, plan, uri = planned(tmp_path)
    (part,) = plan.parts
    key, rid = recorded(uri, part, {1: {"frame_ms": 40.4, "p95": 180.0, "rate": 990.0}})
    result = conclude.solve(settings, inv, plan, {key: rid}, uri)
    assert not result.doubt and result.answer.recommended is None
    assert report.recommendation(result) == [
        "20 CAD user(s) + 2 ML user(s) on Tesla M60: no recommendation: no measured profile serves the mix: "
        f"{part.profile}: GPU time allows 0 CAD guest(s) per GPU (point ends at 1 guest(s): cad_p95_frame_ms 180.0 "
        "> 100)"]
    assert report.metrics_of(result)[f"{part.profile}.n_point"] == 0.0


@pytest.mark.heavy
def test_two_user_types_at_two_qos_levels_give_the_density_table_and_the_vm_to_provision(tmp_path: Path):
    settings, inv, plan, uri = planned(tmp_path, "sizing.users.light=20", "sizing.users.heavy=5",
                                       "sizing.price.gpu=4000", "sizing.price.licence_per_year=450")
    assert [p.label for p in plan.parts] == [f"{p}/timeslice/{t}" for p in (plan.parts[0].profile,)
                                            for t in ("light", "heavy")]
    assert any(n.startswith("CAD users by type (sizing.users): light 20, heavy 5; sizing.mix.cad=20 is not used")
               for n in plan.notes)
    heavy = {1: {"frame_ms": 44.0, "p95": 90.0, "rate": 990.0}, 2: {"frame_ms": 46.0, "p95": 95.0, "rate": 960.0}}
    ids = dict([recorded(uri, plan.parts[0], OK), recorded(uri, plan.parts[1], heavy)])
    result = conclude.solve(settings, inv, plan, ids, uri)
    cells = {(t, lv, c.profile): cell for t, lv, c, cell in result.density}
    me = plan.parts[0].profile
    assert cells[("light", "strict", me)].per_gpu[0] == 2 and cells[("light", "strict", me)].label == "measured"
    assert cells[("light", "typical", me)].per_gpu[0] == 4  # 15 % CAD slowdown at 4: within typical's 20 %
    assert cells[("heavy", "strict", me)].per_gpu[0] == 0 and cells[("heavy", "typical", me)].per_gpu[0] == 2
    assert cells[("light", "strict", "m60-2q")].label == "framebuffer bound only"
    light = result.provision["light"]
    assert light[0].startswith(f"provision: {me} VMs of ") and "10 GPU(s) in 3 host(s) of 4 GPU(s)" in light[0]
    assert light[1].startswith("ML users: the 2 ML user(s) beside the CAD users")
    assert light[2] == "licence: NVIDIA RTX Virtual Workstation (vWS), one per concurrent CAD user"
    said_answer = report.recommendation(result)
    assert said_answer[0].startswith(f"20 light CAD user(s) + 2 ML user(s) on Tesla M60: {me}, 2 CAD guest(s) per GPU, "
                                "10 GPU(s)")
    assert any(line.startswith("5 heavy CAD user(s) on Tesla M60: no recommendation") for line in said_answer)
    md = report.markdown(result, [])
    assert "| light (20) | typical |" in md and "| heavy (5) | strict |" in md
    assert "### " + me + " (light users): what the users feel (medians)" in md
    for table in report.console_tables(result):  # each fits 120 columns with its words whole
        out = Console(width=120, record=True, file=io.StringIO())
        out.print(table)
        lines = out.export_text().splitlines()
        assert max(map(len, lines)) <= 120 and not (broken_tokens(table, lines) if hasattr(table, "columns") else [])


@pytest.mark.heavy
def test_a_stored_figure_that_is_not_a_number_is_skipped_with_a_note_not_a_traceback(tmp_path: Path):
    import sqlite3

    settings, inv, plan, uri = planned(tmp_path)
    (part,) = plan.parts
    key, rid = recorded(uri, part, OK)
    with sqlite3.connect(tmp_path / "mlflow.db") as db:  # a store edited by hand: a string where a figure was
        db.execute("UPDATE metrics SET value = 'abc' WHERE key = 'frames'")
        db.execute("UPDATE latest_metrics SET value = 'abc' WHERE key = 'frames'")
    result = conclude.solve(settings, inv, plan, {key: rid}, uri)
    assert any(n.startswith(f"consolidation {rid}: ") and "are not numbers, skipped (frames='abc'" in n
               for n in result.notes), result.notes
