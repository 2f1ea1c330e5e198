"""Results a site can publish and anyone can check: a run as a result bundle (:mod:`publisher`, its document
:mod:`document`), the run rules that judge one (:mod:`rules`, docs/run-rules.md), a static catalog of many
(:mod:`site`), and the reference study as a bundle of its own (:mod:`reference`). The commands are thin:
``suites/commands/publish.py``, ``check_results.py``, ``catalog.py``, ``rerun.py``; ``make compare A=<bundle>`` reads a
bundle through ``suites/compare/lookup.py``."""

from suites.publish.publisher import publish, rerun_command
from suites.publish.reference import reference_document
from suites.publish.rules import COMPLIANT, PUBLISHED, judge, verdict_lines, verdict_of
from suites.publish.site import entries_of, write_site

__all__ = ["COMPLIANT", "PUBLISHED", "entries_of", "judge", "publish", "reference_document", "rerun_command",
           "verdict_lines", "verdict_of", "write_site"]
