"""The one deadline loop: wait for a condition, giving up at a bound. Every wait in the product and the tests that
has nothing to do between looks uses it; the loops that work between looks (a guest's events, a progress line)
keep their own."""

from __future__ import annotations

import time
from collections.abc import Callable

__all__ = ["wait_until"]


def wait_until(ready: Callable[[], object], timeout_s: float, every_s: float = 0.1) -> bool:
    """Look at ``ready()`` every ``every_s`` until it is true (True) or ``timeout_s`` has passed (False, after one
    last look)."""
    deadline = time.monotonic() + timeout_s
    while not ready():
        if time.monotonic() >= deadline:
            return bool(ready())
        time.sleep(every_s)
    return True
