"""Results a site can publish and anyone can check: a run as a result bundle (:mod:`publisher`, its document
:mod:`document`), the run rules that judge one (:mod:`rules`, docs/run-rules.md), a static catalog of many
(:mod:`site`), and the reference study as a bundle of its own (:mod:`reference`). The commands are thin:
``suites/commands/publish.py``, ``check_results.py``, ``catalog.py``, ``rerun.py``; ``make compare A=<bundle>`` reads a
bundle through ``suites/compare/lookup.py``. Another package imports these names from here, never a module of this
package (``tests/test_layout.py``)."""

from suites.publish.publisher import publish, rerun_command
from suites.publish.reference import reference_document
from suites.publish.rerunnable import data_needs, left_out
from suites.publish.rules import COMPLIANT, PUBLISHED, is_reference, judge, verdict_lines, verdict_of
from suites.publish.site import catalog_problem, entries_of, write_site

__all__ = ["COMPLIANT", "PUBLISHED", "catalog_problem", "data_needs", "entries_of", "is_reference", "judge",
           "left_out", "publish", "reference_document", "rerun_command", "verdict_lines", "verdict_of", "write_site"]
