"""The cyclic garbage collector of the suite's own processes, set for what they do: load many libraries once, then
wait on their guests, then end.

A ``python -m suites bench`` imports ~2,600 modules (Hydra, MLflow, SQLAlchemy, matplotlib, pandas). CPython's
collector walks every tracked object at each full collection: while those libraries load it ran full collections
over an ever larger heap of objects that live until the process ends, and at exit the interpreter's finalisation
collects again, over all of it. Here a process that imports MLflow's store took 3.5-3.8 s, 2.4-2.5 s with
everything frozen before its exit and 1.9-2.1 s with the collector also paused while it imported; a comparison said
its last line 1.3 s before its process ended (issue 88: the suite's own cost).

So, as Python's documentation of :func:`gc.freeze` describes for a process that forks: collection paused while the
libraries load, what they left frozen (moved out of every later collection: it lives as long as the process), and
collection on again for the command's own work, which makes and drops objects as any program does. The preloaded
guest process freezes before each fork, so a forked guest neither walks nor copies the objects it inherited. At a
process's end everything is frozen: the finalisation's collections have nothing to walk, while its atexit
handlers, the flush of its standard streams and the OS's release of its memory are as before.

Freezing is for a process's own entry point (``suites/__main__.py``, the guest's and the zygote's mains): a caller
in a long-lived process (a test calling a command's ``main``) would keep what it froze to its end. A library
imported lazily, wherever that happens, is imported with collection paused only (:func:`importing`).
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

__all__ = ["ending", "importing", "loading"]


@contextlib.contextmanager
def importing() -> Iterator[None]:
    """Collection paused while the block imports, then as it was: nothing frozen, so any process may use it."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


@contextlib.contextmanager
def loading() -> Iterator[None]:
    """Collection paused while the block imports; what exists then frozen, and collection as it was before (a
    process's own entry point only)."""
    with importing():
        try:
            yield
        finally:
            gc.freeze()


def ending() -> None:
    """The process is about to end: nothing left for the interpreter's finalisation to collect."""
    gc.freeze()
