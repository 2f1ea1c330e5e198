"""Tests of ``suites/run/marks.py``: what voids a score (inconclusive) and what only marks it, in text and tags."""

from __future__ import annotations

import math

from suites.run.marks import inconclusive, marks_of, of_repeats, tags_of, text_of
from suites.run.phase_numbers import PhaseNumbers


def test_a_busy_host_or_a_blank_rate_voids_the_score_and_a_missed_target_or_smoke_only_marks_it():
    phases = {"n1": PhaseNumbers(host_other_cpu_pct=40.0), "n2": PhaseNumbers(host_other_cpu_pct=10.0, ml_rate_blank=1),
              "ml": PhaseNumbers(ml_missed="accuracy 0.80 < 0.98")}
    marks = marks_of(phases, busy_pct=25.0, scale="smoke")
    assert [m.voids for m in marks] == [True, True, False, False] and inconclusive(marks)
    text = text_of(marks)
    assert text.startswith("inconclusive: host busy in 1 of 3 phase(s) (other processes up to 40 % of a core > "
                           "host_busy_pct=25); ML rate blank in n2") and "marked: ML guest missed its target" in text
    tags = tags_of(marks)
    assert tags["bench.host_busy"].startswith("host busy") and "bench.inconclusive" in tags
    assert marks_of(phases) != [] and not inconclusive(marks_of({"n1": PhaseNumbers(host_other_cpu_pct=math.nan)}))
    assert text_of([]) == "" and tags_of([]) == {}


def test_each_repeat_is_judged_and_named_where_a_phase_has_several():
    marks = of_repeats({"n1": [PhaseNumbers(host_other_cpu_pct=5.0), PhaseNumbers(host_other_cpu_pct=60.0)]}, 25.0)
    assert len(marks) == 1 and "host busy in 1 of 2 phase(s)" in marks[0].text
    blank = of_repeats({"n1": [PhaseNumbers(ml_rate_blank=1), PhaseNumbers()]})
    assert "ML rate blank in n1 r1" in blank[0].text
