"""What changed between two runs (``make compare``), laid out as every campaign command (docs/development.md): its
command (:mod:`command`), its arguments (:mod:`settings`), a launched run read back as figures (:mod:`results`), B / A
with its interval and verdict, the nightly gate and what one compare concluded (:mod:`conclude`), the report
(:mod:`report`); and which runs are read (:mod:`lookup`), the set-ups' differences (:mod:`setups`), one figure's history
(:mod:`history`). Another package imports these names from here, never a module of this package
(``tests/test_layout.py``)."""

from suites.compare.conclude import Change, Compared, Gate
from suites.compare.lookup import figures_of, host_of, scenario_of
from suites.compare.results import MAKESPAN, Figure, RunFigures
from suites.compare.setups import NOT_SETUP, OLD_NAMES, Difference

__all__ = ["MAKESPAN", "NOT_SETUP", "OLD_NAMES", "Change", "Compared", "Difference", "Figure", "Gate", "RunFigures",
           "figures_of", "host_of", "scenario_of"]
