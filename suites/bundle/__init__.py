"""A result bundle: one published result as data (``make publish`` writes one, ``make check-results`` judges one,
``make catalog`` lists many, ``make compare A=<bundle>`` reads one beside a run).

A bundle is ``<name>.bundle.tar.gz`` holding ``bundle.json`` (the document: its JSON Schema is
``suites/bundle/schema.json``, docs/results.md says every field) and ``plots/*.png``, or the bare ``bundle.json``.
It is read as data, never as code: :mod:`suites.bundle.archive` refuses, in one line, an archive or a document that is
malformed, oversized, path-traversing, linked or off its schema, before anything reads a figure of it.
"""

from suites.bundle.archive import FORMAT, LEFT_OUT, VERSION, Bundle, BundleError, read, write

__all__ = ["FORMAT", "LEFT_OUT", "VERSION", "Bundle", "BundleError", "read", "write"]
