"""``make gpu-check``, laid out as every campaign command (docs/development.md): its command (:mod:`command`),
its keys (:mod:`settings`), its checks in priority order as one campaign under one deadline (:mod:`campaign`), how it
ends (:mod:`conclude`) and its summary, device file and tarball (:mod:`report`); the checks themselves (``checks``,
``suite_checks``: each GPU path of the suite run for real), their judges (``judges``: what each result should be on a
healthy GPU), and ``make rehearse``'s stand-ins (``played``) and judges (``rehearsal``).

Another package imports these names from here, never a module of this package (``tests/test_layout.py``): gpu-check's
budget and checks, and what ``make rehearse`` (``suites/commands/rehearse.py``) plays and judges."""

from suites.gpucheck.played import StandIn
from suites.gpucheck.rehearsal import Check, Played, data_checks, missed, over_share, overrun, play, rehearsed, removed
from suites.gpucheck.settings import BUDGET_S, PRIORITY

__all__ = ["BUDGET_S", "PRIORITY", "Check", "Played", "StandIn", "data_checks", "missed", "over_share", "overrun",
           "play", "rehearsed", "removed"]
