"""What changed between two runs (``make compare``): a launched run read back as figures (:mod:`figures`), the
set-ups' differences (:mod:`setups`), B / A with its interval and verdict and the nightly gate (:mod:`verdicts`),
which runs are read (:mod:`lookup`), the report (:mod:`document`) and one figure's history (:mod:`history`)."""

from suites.changes.document import Comparison
from suites.changes.figures import Figure, RunFigures
from suites.changes.setups import Difference
from suites.changes.verdicts import Change, Gate

__all__ = ["Change", "Comparison", "Difference", "Figure", "Gate", "RunFigures"]
