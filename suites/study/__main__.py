"""``python -m suites.study``: ``make study`` (:mod:`suites.study.command`) under a short name, for bare GPU hosts."""

import sys

from suites.study.command import main

if __name__ == "__main__":
    sys.exit(main())
