"""The reference study (``make study``, ``python -m suites study``): the vendor's two-part M60 study reproduced on this
host within a time budget, laid out as every campaign command (docs/development.md): ``command``, ``settings`` (the
``study.*`` keys), ``plan`` (which parts fit, at what size: pure), ``campaign`` (the plan composed, timed by trial runs,
fitted, as one campaign), ``conclude`` (its end: the timing, the plan recorded, the report), ``results`` (the study read
back from MLflow), ``report`` (Markdown, HTML, figures, console table). The mixed and consolidation scenarios it runs
are :mod:`suites.run.mixed`; what a phase run costs is :mod:`suites.campaign.costs`.

Another package imports these names from here, never a module of this package (``tests/test_layout.py``): the
reference study's figures (the one place they are kept), a stored study read back and its report."""

from suites.study.plan import EPISODE_1, MIXED_REFERENCE, THROUGHPUT_X
from suites.study.report import banner, console_table
from suites.study.report import write as write_report
from suites.study.results import ReferenceStudy, latest_study, read_study

__all__ = ["EPISODE_1", "MIXED_REFERENCE", "THROUGHPUT_X", "ReferenceStudy", "banner", "console_table", "latest_study",
           "read_study", "write_report"]
