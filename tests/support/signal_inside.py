"""A suite command with a signal delivered *inside* one of its shields (suites/run/shield.py), never by timing:

    python -m tests.support.signal_inside TARGET SIGNAL CALL MODULE[:FUNCTION] [ARGS...]

TARGET (``package.module:Class.method`` or ``package.module:function``, called through its module or class) is
wrapped so that its CALL-th call (1: the first) sends SIGNAL (INT, TERM, HUP) to this process and then does its work:
the handler runs there, in the main thread, while the shield around the call is up. Then ``MODULE.FUNCTION(ARGS)``
(``main`` unless named) runs as its command line would, and its exit status is this process's. The line
``signal-inside: sent SIG... in TARGET`` goes to standard error when it is sent, so a test can tell the signal did
land (a target never called sends none).
"""

from __future__ import annotations

import functools
import importlib
import os
import signal
import sys
from collections.abc import Callable
from typing import Any


def wrap(target: str, signum: int, call: int) -> None:
    module_name, _, attr = target.partition(":")
    owner: Any = importlib.import_module(module_name)
    *path, name = attr.split(".")
    for part in path:
        owner = getattr(owner, part)
    original: Callable[..., Any] = getattr(owner, name)
    calls = [0]

    @functools.wraps(original)
    def sends_then_works(*args: Any, **kwargs: Any) -> Any:
        calls[0] += 1
        if calls[0] == call:
            print(f"signal-inside: sent {signal.Signals(signum).name} in {target}", file=sys.stderr, flush=True)
            os.kill(os.getpid(), signum)
        return original(*args, **kwargs)

    setattr(owner, name, sends_then_works)


def main(argv: list[str]) -> int:
    target, sig, call, module, *args = argv
    wrap(target, getattr(signal, f"SIG{sig}"), int(call))
    module, _, function = module.partition(":")
    return int(getattr(importlib.import_module(module), function or "main")(args) or 0)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
