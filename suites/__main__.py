"""``python -m suites <command> [args]``: every command of the suite (:mod:`suites.commands`); :func:`run` is the
console script ``gpu-mixed-bench``, the same."""

import sys
from typing import NoReturn

from suites import process_gc
from suites.commands import main

__all__ = ["main", "run"]


def run() -> NoReturn:
    """This process is the command's: its libraries load frozen, and nothing is collected at its end
    (suites/process_gc.py: 1.3 s after a comparison's last line)."""
    code = main(own_process=True)
    process_gc.ending()
    sys.exit(code)


if __name__ == "__main__":
    run()
