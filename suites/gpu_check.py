"""``python -m suites.gpu_check``: ``make gpu-check`` (:mod:`suites.app.gpu_check`) under a short name."""

import sys

from suites.app.gpu_check import main

if __name__ == "__main__":
    sys.exit(main())
