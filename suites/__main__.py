"""``python -m suites <command> [args]``: every command of the suite (:mod:`suites.commands`)."""

import sys

from suites.commands import main

__all__ = ["main"]

if __name__ == "__main__":
    sys.exit(main())
