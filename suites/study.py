"""``python -m suites.study``: ``make study`` (:mod:`suites.app.study`) under a short name, for bare GPU hosts."""

import sys

from suites.app.study import main

if __name__ == "__main__":
    sys.exit(main())
