"""Tests of ``suites/study/report.py``."""

from __future__ import annotations

from pathlib import Path

from suites.study import report as study_report
from suites.study.plan import EPISODE_1
from suites.study.results import PartResult, ReferenceStudy
from suites.validity import NOT_ENFORCED
from tests.support.outcomes import check


def test_episode_1_ratios_fit(tmp_path: Path, drawn: list):
    parts = {p.name: PartResult(f"run-{p.name}", {f"{r.phase}.{r.metric}": 2.5 for r in p.references} |
                                {f"{r.phase}.{r.metric}.ci_low": 2.0 for r in p.references} |
                                {f"{r.phase}.{r.metric}.ci_high": 3.0 for r in p.references},
                                {f"bench.validity.{r.phase}": NOT_ENFORCED for r in p.references})
             for p in EPISODE_1}
    path = study_report.draw_ratios(ReferenceStudy("s", {}, parts=parts), tmp_path)
    assert path is not None and len(drawn) == 1
    check(drawn[0], path)
