"""What changed between two runs (``make compare``), laid out as every campaign command (docs/development.md): its
command (:mod:`command`), its arguments (:mod:`settings`), a launched run read back as figures (:mod:`results`), B / A
with its interval and verdict, the nightly gate and what one compare concluded (:mod:`conclude`), the report
(:mod:`report`); and which runs are read (:mod:`lookup`), the set-ups' differences (:mod:`setups`), one figure's history
(:mod:`history`)."""

from suites.compare.conclude import Change, Compared, Gate
from suites.compare.results import Figure, RunFigures
from suites.compare.setups import Difference

__all__ = ["Change", "Compared", "Difference", "Figure", "Gate", "RunFigures"]
