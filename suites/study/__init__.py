"""The reference study (``make study``, ``python -m suites study``): the vendor's two-part M60 study reproduced on
this host within a time budget. ``settings`` (the ``study.*`` keys), ``planner`` (which parts fit, at what size),
``command`` (runs them through the pipeline), ``results`` (the study read back from MLflow), ``writeup`` (its
report: Markdown, HTML, figures, console table). "study" means this and nothing else in the code; the mixed and
consolidation scenarios it runs are :mod:`suites.run.mixed`."""
