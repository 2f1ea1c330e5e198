"""Tests of ``suites/campaign/spec.py``: what a campaign run says of its parts (its exit status, the runs measured or
reused, a part's folder) and its own figures recorded on the parent run."""

from __future__ import annotations

from pathlib import Path

from suites.campaign.spec import MEASURED, NOT_RUN, REUSED, SKIPPED, CampaignPart, CampaignRun, PartRun, overran
from suites.pipeline.orchestrate import Nest
from suites.record import mlflow_runs
from suites.record.recorder import Recorder
from suites.record.store_reader import StoreReader
from suites.run.outcome import EXIT_INTERRUPTED
from tests.support.helpers import compose_config, store_at


def test_a_campaign_runs_exit_status_is_its_worst_parts_or_interrupted_where_it_stopped():
    run = CampaignRun(None, Path("."), None, [PartRun("a", MEASURED, "r1", code=0),  # type: ignore[arg-type]
                                             PartRun("b", MEASURED, "r2", code=1), PartRun("c", REUSED, "r3"),
                                             PartRun("d", SKIPPED, why="late"), PartRun("e", NOT_RUN)])
    assert run.code == 1 and run.run_ids() == {"a": "r1", "b": "r2", "c": "r3"}
    assert [p.name for p in run.left(SKIPPED, NOT_RUN)] == ["d", "e"]
    run.stopped = "interrupted (Ctrl-C) during b"
    assert run.code == EXIT_INTERRUPTED
    assert CampaignRun(None, Path("."), None).code == 0  # type: ignore[arg-type]


def test_a_part_past_twice_its_estimate_is_said():
    assert overran(10.0, 25.0) == "ran 2.5x its estimate"
    assert overran(10.0, 20.0) == "" and overran(0.0, 20.0) == ""


def test_a_parts_folder_is_its_name_with_no_slash():
    assert CampaignPart("m60-2q/timeslice/light", None).folder == "m60-2q-timeslice-light"  # type: ignore[arg-type]


def test_the_campaigns_own_figures_land_on_the_parent_run(tmp_path: Path):
    cfg = compose_config(f"tracking_uri={store_at(tmp_path / 'mlflow.db')}", f"artifact_dir={tmp_path / 'art'}")
    recorder = Recorder(cfg, [].append)
    parent = recorder.start_parent("study-x", {"bench.kind": "study"})
    run = CampaignRun(None, tmp_path, Nest(recorder, parent))  # type: ignore[arg-type]
    run.record(mlflow_runs.ParentResults({"tier": "smoke"}, {"elapsed_s": 12.0}, {"bench.skips": "[]"}))
    stored = StoreReader(recorder.tracker.uri).run(parent.run_id)
    assert stored.params["tier"] == "smoke" and stored.metrics["elapsed_s"] == 12.0
    assert stored.tags["bench.skips"] == "[]"


def test_a_campaign_run_reads_its_store_through_one_reader_and_none_without_a_store(tmp_path: Path):
    cfg = compose_config(f"tracking_uri={store_at(tmp_path / 'mlflow.db')}", f"artifact_dir={tmp_path / 'art'}")
    recorder = Recorder(cfg, [].append)
    run = CampaignRun(None, tmp_path, Nest(recorder, None))  # type: ignore[arg-type]
    assert run.reader is run.reader and run.reader.uri == recorder.tracker.uri
    recorder.tracker = None
    assert CampaignRun(None, tmp_path, Nest(recorder, None)).reader is None  # type: ignore[arg-type]
