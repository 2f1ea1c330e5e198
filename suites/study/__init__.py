"""The reference study (``make study``, ``python -m suites study``): the vendor's two-part M60 study reproduced on this
host within a time budget, laid out as every campaign command (docs/development.md): ``command``, ``settings`` (the
``study.*`` keys), ``plan`` (which parts fit, at what size: pure), ``campaign`` (the plan composed, timed by trial runs,
fitted, as one campaign), ``conclude`` (its end: the timing, the plan recorded, the report), ``results`` (the study read
back from MLflow), ``report`` (Markdown, HTML, figures, console table). The mixed and consolidation scenarios it runs
are :mod:`suites.run.mixed`; what a phase run costs is :mod:`suites.campaign.costs`."""
