"""``python -m suites.sync``: import runs into the local store (:mod:`suites.app.sync`) under a short name."""

import sys

from suites.app.sync import main

if __name__ == "__main__":
    sys.exit(main())
