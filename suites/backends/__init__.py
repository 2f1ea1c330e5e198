"""Where guests run, seen from the runner: placement, guest handles, and one :class:`Backend` per engine.

``local`` (processes on this host) and ``ray`` (actors on a Ray cluster);
:func:`suites.backends.factory.backend_for` is the one place that picks one.
The guest-side worker is :mod:`suites.guest`, which imports nothing from here.
"""
