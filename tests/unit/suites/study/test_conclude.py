"""Tests of ``suites/study/conclude.py``: once the parts ran, what was not measured joins the study's skips, each part's
planned seconds stand beside what it took (one past twice its estimate said), and the plan lands on the study run."""

from __future__ import annotations

import io
import json
from pathlib import Path

from rich.console import Console

from gpu_probe.inventory import collect
from suites.campaign import Campaign, CampaignRun
from suites.campaign.spec import PartRun
from suites.pipeline.orchestrate import Nest
from suites.record.recorder import Recorder
from suites.record.store_reader import StoreReader
from suites.study import conclude
from suites.study.campaign import Study
from suites.study.plan import Measured, Skip, StudyPlan
from suites.study.settings import StudySettings
from tests.support.helpers import compose_config, store_at


def test_the_parts_not_measured_join_the_skips_and_the_plan_lands_on_the_study_run(tmp_path: Path):
    cfg = compose_config(f"tracking_uri={store_at(tmp_path / 'mlflow.db')}", f"artifact_dir={tmp_path / 'art'}")
    said: list[str] = []
    recorder = Recorder(cfg, said.append)
    parent = recorder.start_parent("study-x", {"bench.kind": "study"})
    campaign = Campaign("study", "study", tmp_path, [], "bench.study_part")
    run = CampaignRun(campaign, tmp_path, Nest(recorder, parent),
                      [PartRun("gpu-vs-cpu", "measured", "r1", 30.0), PartRun("mixed", "skipped", why="not started")])
    sp = StudyPlan([], [Skip("mnist-tf", "tensorflow not installed")], "smoke", 1, 50.0, 0,
                   {"gpu-vs-cpu": 10.0, "mixed": 40.0}, {"mnist-torch": "the planner's table"})
    text = io.StringIO()
    study = Study(StudySettings(), collect(), [], 0, "no GPU", {}, Measured())
    conclude.concluder(study, sp, Console(file=text, width=120))(run)
    assert said == [] and [s.what for s in sp.skips] == ["mnist-tf", "mixed"]  # the part not measured joins them
    lines = [" ".join(ln.replace("│", " ").split()) for ln in text.getvalue().splitlines()]
    assert any("gpu-vs-cpu 10 30 ran 3.0x its estimate" in ln for ln in lines), lines
    assert any("mixed 40 not run" in ln for ln in lines), lines
    stored = StoreReader(recorder.tracker.uri).run(parent.run_id)
    assert stored.metrics["gpu-vs-cpu.actual_s"] == 30.0 and "mixed.actual_s" not in stored.metrics
    assert stored.metrics["mixed.estimate_s"] == 40.0 and stored.params["tier"] == "smoke"
    assert json.loads(stored.tags["bench.skips"]) == [["mnist-tf", "tensorflow not installed"],
                                                      ["mixed", "not started"]]
